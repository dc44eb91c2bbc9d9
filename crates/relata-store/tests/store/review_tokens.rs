use relata_store::review_token_sha256;

use crate::common::TestDb;

#[tokio::test]
async fn a_new_token_revokes_the_old_and_only_its_hash_is_stored() {
    let db = TestDb::new().await;
    db.store
        .issue_review_token("ada", "rlt_first")
        .await
        .unwrap();
    assert!(
        db.store
            .check_review_token("ada", "rlt_first")
            .await
            .unwrap()
    );
    assert!(
        !db.store
            .check_review_token("ada", "rlt_firsT")
            .await
            .unwrap()
    );
    assert!(
        !db.store
            .check_review_token("grace", "rlt_first")
            .await
            .unwrap(),
        "another name"
    );

    db.store
        .issue_review_token("ada", "rlt_second")
        .await
        .unwrap();
    assert!(
        !db.store
            .check_review_token("ada", "rlt_first")
            .await
            .unwrap(),
        "revoked"
    );
    assert!(
        db.store
            .check_review_token("ada", "rlt_second")
            .await
            .unwrap()
    );

    let stored: Vec<(String, String)> =
        sqlx::query_as("SELECT reviewer, token_sha256 FROM review_tokens")
            .fetch_all(db.pool())
            .await
            .unwrap();
    assert_eq!(
        stored,
        vec![("ada".to_owned(), review_token_sha256("rlt_second"))]
    );
    assert!(!stored[0].1.contains("rlt_"));
}
