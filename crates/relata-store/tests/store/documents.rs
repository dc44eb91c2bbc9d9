use relata_store::{ChunkSpan, ErrorKind, UpsertKind};

use crate::common::{TestDb, ingest, paragraphs};

const V1: &str = "Zürich is a city.\n\nIt lies on a lake.";
const V2: &str = "Zürich is a large city.\n\nIt lies on a lake.\n\nIt has a university.";

#[tokio::test]
async fn upsert_new_unchanged_changed_and_revert() {
    let db = TestDb::new().await;
    let s = &db.store;

    let new = ingest(s, "zurich", V1).await;
    assert_eq!(new.kind, UpsertKind::New);
    assert_eq!(new.chunk_ids.len(), 2);

    let same = ingest(s, "zurich", V1).await;
    assert_eq!(same.kind, UpsertKind::Unchanged);
    assert_eq!(same.document_id, new.document_id);
    assert_eq!(same.revision_id, new.revision_id);
    assert_eq!(same.chunk_ids, new.chunk_ids);
    assert_eq!(db.count("document_revisions").await, 1);
    assert_eq!(db.count("chunks").await, 2);

    let changed = ingest(s, "zurich", V2).await;
    assert_eq!(changed.kind, UpsertKind::Changed);
    assert_eq!(changed.document_id, new.document_id);
    assert_ne!(changed.revision_id, new.revision_id);
    assert_eq!(changed.chunk_ids.len(), 3);
    // The old revision and its chunks stay.
    assert_eq!(db.count("document_revisions").await, 2);
    assert_eq!(db.count("chunks").await, 5);

    // Back to the first text: the first revision is current again, nothing new written.
    let revert = ingest(s, "zurich", V1).await;
    assert_eq!(revert.kind, UpsertKind::Changed);
    assert_eq!(revert.revision_id, new.revision_id);
    assert_eq!(revert.chunk_ids, new.chunk_ids);
    assert_eq!(db.count("document_revisions").await, 2);

    // Same external id under another source is another document.
    let other = s
        .upsert_document("elsewhere", "zurich", None, V1, &paragraphs(V1))
        .await
        .unwrap();
    assert_eq!(other.kind, UpsertKind::New);
    assert_ne!(other.document_id, new.document_id);
    assert_eq!(db.count("documents").await, 2);
}

#[tokio::test]
async fn chunks_are_the_revision_bytes_at_their_offsets() {
    let db = TestDb::new().await;
    let up = ingest(&db.store, "zurich", V2).await;
    for (i, id) in up.chunk_ids.iter().enumerate() {
        let c = db.store.load_chunk(*id).await.unwrap();
        assert_eq!(c.ordinal as usize, i);
        assert_eq!(&V2[c.start_byte..c.end_byte], c.text);
    }
    let mismatched: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM chunks c JOIN document_revisions r ON r.id = c.revision_id
         WHERE substring(convert_to(r.text, 'UTF8') FROM c.start_byte + 1 FOR c.end_byte - c.start_byte)
               <> convert_to(c.text, 'UTF8')",
    )
    .fetch_one(db.pool())
    .await
    .unwrap();
    assert_eq!(mismatched, 0);
}

#[tokio::test]
async fn bad_spans_are_refused_and_nothing_is_written() {
    let db = TestDb::new().await;
    // Byte 2 is inside "ü".
    for spans in [
        vec![ChunkSpan { start: 0, end: 2 }],
        vec![ChunkSpan { start: 0, end: 999 }],
        vec![ChunkSpan { start: 5, end: 5 }],
        vec![
            ChunkSpan { start: 6, end: 10 },
            ChunkSpan { start: 0, end: 4 },
        ],
    ] {
        let err = db
            .store
            .upsert_document("test", "bad", None, V1, &spans)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        assert!(!err.is_retryable());
    }
    assert_eq!(db.count("documents").await, 0);
}

#[tokio::test]
async fn missing_chunk_is_not_found() {
    let db = TestDb::new().await;
    let err = db.store.load_chunk(42).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
}
