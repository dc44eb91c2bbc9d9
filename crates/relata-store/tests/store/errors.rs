use std::time::Duration;

use relata_store::{ErrorKind, Store, StoreError, StoreOptions};

#[tokio::test]
async fn an_unreachable_database_is_retryable() {
    let options = StoreOptions {
        max_connections: 1,
        acquire_timeout: Duration::from_secs(2),
        ..StoreOptions::default()
    };
    // Port 1 on loopback: nothing listens there.
    let err = Store::connect_with("postgres://postgres@127.0.0.1:1/postgres", &options)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err:?}");
    assert!(err.is_retryable());
}

#[tokio::test]
async fn classification_of_database_errors() {
    let db = crate::common::TestDb::new().await;
    // A unique violation is a bug, not a transient condition.
    for _ in 0..2 {
        let r = sqlx::query("INSERT INTO documents (source, external_id) VALUES ('s', 'x')")
            .execute(db.pool())
            .await;
        if let Err(e) = r {
            let e = StoreError::from(e);
            assert_eq!(e.kind(), ErrorKind::Invariant);
            assert!(!e.is_retryable());
            assert_eq!(e.sqlstate().as_deref(), Some("23505"));
        }
    }
    // A serialization failure and a deadlock are retryable.
    for code in ["40001", "40P01", "57P01"] {
        let sql = format!("DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '{code}'; END $$");
        let e = sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(db.pool())
            .await
            .unwrap_err();
        let e = StoreError::from(e);
        assert!(e.is_retryable(), "{code}: {e}");
    }
    assert!(!StoreError::InvalidInput("x".into()).is_retryable());
}

#[tokio::test]
async fn a_data_exception_is_refused_for_good_not_retried_as_unavailable() {
    let db = crate::common::TestDb::new().await;
    // What a NUL in a text column does, through the same driver and encoding as a commit.
    let e = sqlx::query("INSERT INTO documents (source, external_id) VALUES ('s', $1)")
        .bind("a\0b")
        .execute(db.pool())
        .await
        .unwrap_err();
    let e = StoreError::from(e);
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e:?}");
    assert!(!e.is_retryable(), "{e}");
    // Any other data exception (SQLSTATE class 22) is the same.
    let e = sqlx::query("DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '22023'; END $$")
        .execute(db.pool())
        .await
        .unwrap_err();
    assert!(!StoreError::from(e).is_retryable());
}

#[tokio::test]
async fn a_database_without_the_schema_is_not_migrated_not_unavailable() {
    let db = crate::common::TestDb::empty().await;
    let store = &db.store;
    let e = store.check_migrated().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotMigrated, "{e:?}");
    assert!(!e.is_retryable());
    assert!(e.to_string().contains("run `relata migrate`"), "{e}");
    store.migrate().await.unwrap();
    store.check_migrated().await.unwrap();
}

/// A pool that names its connections shows the name in `pg_stat_activity` (the promoter's
/// are `relata-promoter`: how its database work is told from the jobs'); one that does
/// not keeps the URL's.
#[tokio::test]
async fn a_pool_can_name_its_connections() {
    let db = crate::common::TestDb::new().await;
    let options = StoreOptions {
        application_name: Some(relata_store::PROMOTER_APPLICATION_NAME),
        ..StoreOptions::default()
    };
    let named = Store::connect_with(db.url(), &options).await.unwrap();
    let name = |pool| async move {
        sqlx::query_scalar::<_, String>("SELECT current_setting('application_name')")
            .fetch_one(pool)
            .await
            .unwrap()
    };
    assert_eq!(name(named.pool()).await, "relata-promoter");
    assert_ne!(name(db.pool()).await, "relata-promoter");
    named.close().await;
}
