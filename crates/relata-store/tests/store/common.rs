use chrono::Utc;
use relata_core::{CLASSIFY_V1, EXTRACT_V1, JobId, TaskVersion};
use relata_store::{
    ChunkRow, ChunkSpan, CommitOutcome, Committed, JobToPublish, NewModelCall, Store, StoreOptions,
    UpsertOutcome,
};
use relata_testkit::harness::{Services, TestDatabase};
use relata_validate::{GateConfig, judge_extract};
use sqlx::AssertSqlSafe;

/// A fresh, migrated database, dropped when this goes out of scope (also when the test
/// fails): the store on top of `relata_testkit::harness::TestDatabase`.
pub struct TestDb {
    pub store: Store,
    // Declared after the store: the pool closes before the database is dropped.
    _guard: TestDatabase,
}

impl TestDb {
    pub async fn new() -> TestDb {
        let db = TestDb::empty().await;
        db.store.migrate().await.expect("migrations apply");
        db
    }

    /// A fresh database without migrations.
    pub async fn empty() -> TestDb {
        let guard = TestDatabase::create(&Services::from_env(), "test")
            .await
            .expect("test PostgreSQL reachable (run scripts/ensure-services.sh)");
        let options = StoreOptions {
            max_connections: 8,
            ..StoreOptions::default()
        };
        let store = Store::connect_with(guard.url(), &options)
            .await
            .expect("connect to test database");
        TestDb {
            store,
            _guard: guard,
        }
    }

    pub fn pool(&self) -> &sqlx::PgPool {
        self.store.pool()
    }

    pub fn url(&self) -> &str {
        self._guard.url()
    }

    pub async fn count(&self, table: &str) -> i64 {
        sqlx::query_scalar(AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
            .fetch_one(self.pool())
            .await
            .expect("count")
    }
}

pub fn extract_version() -> TaskVersion {
    TaskVersion::new(&EXTRACT_V1, "extract-p1", "test-model")
}

pub fn classify_version() -> TaskVersion {
    TaskVersion::new(&CLASSIFY_V1, "classify-p1", "test-model")
}

pub fn join_version() -> TaskVersion {
    TaskVersion::new(&relata_core::JOIN_V1, "join-p1", "test-model")
}

pub fn call(version: &TaskVersion) -> NewModelCall {
    let now = Utc::now();
    NewModelCall {
        version: version.clone(),
        started_at: now - chrono::Duration::milliseconds(1500),
        finished_at: now,
        attempts: 1,
        prompt_tokens: Some(120),
        completion_tokens: Some(80),
        excerpt: Some("{\"entities\": ...".to_owned()),
        sent_schema_sha256: Some("5e".repeat(32)),
    }
}

/// Spans of the paragraphs of `text` (split on blank lines).
pub fn paragraphs(text: &str) -> Vec<ChunkSpan> {
    let mut out = Vec::new();
    let mut start = 0;
    for part in text.split("\n\n") {
        let end = start + part.len();
        if !part.is_empty() {
            out.push(ChunkSpan { start, end });
        }
        start = end + 2;
    }
    out
}

pub async fn ingest(store: &Store, external_id: &str, text: &str) -> UpsertOutcome {
    store
        .upsert_document(
            "test",
            external_id,
            Some(external_id),
            text,
            &paragraphs(text),
        )
        .await
        .expect("upsert")
}

/// The extract job of a chunk, created (and returned) whether or not it existed.
pub async fn extract_job(store: &Store, chunk_id: i64) -> JobId {
    let v = extract_version();
    let chunk = store.load_chunk(chunk_id).await.expect("chunk");
    let id = relata_store::extract_job_id(&v, chunk.id, &chunk.sha256);
    store
        .ensure_extract_jobs(&v, &[chunk_id])
        .await
        .expect("jobs");
    id
}

pub fn committed(o: CommitOutcome) -> Committed {
    match o {
        CommitOutcome::Committed(c) => c,
        other => panic!("expected Committed, got {other:?}"),
    }
}

/// Ingest a one-chunk document and commit an extract response for it.
pub async fn extract_doc(
    store: &Store,
    external_id: &str,
    text: &str,
    response: &str,
) -> (ChunkRow, JobId, Committed) {
    extract_doc_judged_by(&GateConfig::default(), store, external_id, text, response).await
}

/// [`extract_doc`] with the response judged by `gate`.
pub async fn extract_doc_judged_by(
    gate: &GateConfig,
    store: &Store,
    external_id: &str,
    text: &str,
    response: &str,
) -> (ChunkRow, JobId, Committed) {
    let up = ingest(store, external_id, text).await;
    let chunk = store.load_chunk(up.chunk_ids[0]).await.expect("chunk");
    let job = extract_job(store, chunk.id).await;
    let j = judge_extract(gate, &chunk.text, response.as_bytes());
    let c = committed(
        store
            .commit_extract(&job, &call(&extract_version()), &j, &chunk)
            .await
            .expect("commit"),
    );
    (chunk, job, c)
}

/// The default gate with the support check switched off. The support check rejects a
/// statement whose figure its quote lacks, so by default no claim is kept with the
/// `figure_not_in_quote` warning; tests of how the store keeps warnings judge with this,
/// as a deployment that switched support off would.
pub fn gate_without_support() -> GateConfig {
    let mut gate = GateConfig::default();
    gate.set(
        relata_core::Check::Supported,
        relata_validate::CheckSetting {
            enabled: false,
            severity: relata_core::Severity::Reject,
        },
    )
    .expect("support is not structural");
    gate
}

/// A response with one entity and one claim about it.
pub fn one_claim(subject: &str, statement: &str, quote: &str) -> String {
    serde_json::json!({
        "entities": [{"name": subject, "type": "organization"}],
        "claims": [{"statement": statement, "quote": quote, "subject": subject}],
    })
    .to_string()
}

/// The reviewer the promotion tests decide as.
pub fn ada() -> relata_core::Reviewer {
    relata_core::Reviewers::new(["Ada Lovelace"])
        .expect("a reviewer list")
        .get("Ada Lovelace")
        .expect("Ada is on it")
}

/// How the promotion tests' decisions are made: as `relata review` would record them.
pub fn via() -> relata_store::Via {
    relata_store::Via::CommandLine {
        os_user: "tester".to_owned(),
        host: "test-host".to_owned(),
    }
}

/// Run the shipped policy over every candidate without a decision (up to 100 of each
/// kind), waiting for the chain if another run holds it.
pub async fn judge(store: &Store) -> relata_store::PromoteSummary {
    store
        .promote_pending(
            &relata_core::Policy::shipped(),
            relata_store::Sweep::batch(100),
        )
        .await
        .expect("promote")
}

/// Commit a classify response for `job` that calls every pair it carries `contradicts`,
/// under `version`.
pub async fn commit_all_contradict(
    s: &Store,
    job: &JobToPublish,
    version: &TaskVersion,
) -> Committed {
    let pairs = job.input.pairs().expect("a classify job").to_vec();
    let claims = s
        .load_claims_for_pairs(&pairs)
        .await
        .expect("the pairs' claims");
    let mut handle_map = std::collections::BTreeMap::new();
    let mut handle_of = std::collections::BTreeMap::new();
    for (i, c) in claims.iter().enumerate() {
        let h = relata_core::Handle::nth(i as u32 + 1);
        handle_map.insert(h, c.id);
        handle_of.insert(c.id, h);
    }
    let input = relata_validate::ClassifyInput {
        handles: handle_map.keys().copied().collect(),
        pairs: pairs
            .iter()
            .map(|(x, y)| (handle_of[x], handle_of[y]))
            .collect(),
    };
    let relations: Vec<_> = input
        .pairs
        .iter()
        .map(|(x, y)| {
            serde_json::json!({"a": x.to_string(), "b": y.to_string(), "relation": "contradicts"})
        })
        .collect();
    let raw = serde_json::json!({ "relations": relations }).to_string();
    let j = relata_validate::judge_classify(&GateConfig::default(), &input, raw.as_bytes());
    committed(
        s.commit_classify(&job.job_id, &call(version), &j, &handle_map)
            .await
            .expect("the classify commit"),
    )
}
