//! The harness's guards against the real PostgreSQL: what they create exists while they
//! live and is gone after they drop — also when the test holding them panics.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use relata_testkit::harness::{Harness, ScratchDir, Services, TestDatabase};

async fn exists(name: &str) -> bool {
    relata_store::testing::database_exists(&Services::from_env().admin_url, name)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_test_database_is_dropped_with_its_guard() {
    let db = TestDatabase::create(&Services::from_env(), "harness")
        .await
        .unwrap();
    let name = db.name().to_owned();
    assert!(exists(&name).await);
    let store = relata_store::Store::connect(db.url()).await.unwrap();
    // An open connection does not keep the database alive: the drop forces it closed.
    drop(db);
    assert!(!exists(&name).await);
    store.close().await;
}

#[tokio::test]
async fn cleanup_runs_when_the_test_panics() {
    let (tx, rx) = std::sync::mpsc::channel();
    let failed = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let h = Harness::new(&Services::from_env(), "harness", vec![200])
                .await
                .unwrap();
            tx.send((h.db.name().to_owned(), h.dir.path().to_owned()))
                .unwrap();
            panic!("a failing test");
        })
    })
    .join();
    assert!(failed.is_err(), "the thread was meant to panic");
    let (name, dir) = rx.recv().unwrap();
    assert!(!exists(&name).await, "database {name} left behind");
    assert!(!dir.exists(), "directory {} left behind", dir.display());
}

#[tokio::test]
async fn kept_resources_stay() {
    let mut db = TestDatabase::create(&Services::from_env(), "harness")
        .await
        .unwrap();
    let mut dir = ScratchDir::new("relata-harness-").unwrap();
    let name = db.name().to_owned();
    let path = dir.path().to_owned();
    db.keep();
    dir.keep();
    drop(db);
    drop(dir);
    assert!(exists(&name).await);
    assert!(path.exists());
    relata_store::testing::drop_database(&Services::from_env().admin_url, &name)
        .await
        .unwrap();
    std::fs::remove_dir_all(&path).unwrap();
}
