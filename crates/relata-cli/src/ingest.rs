//! `relata ingest`: corpus → documents, revisions, chunks, extract jobs → broker.
//!
//! Each document is upserted in its own transaction (with its chunks and, for new
//! content, nothing else), so a bad item or a crash leaves nothing half-written: either a
//! document and all its chunks are stored, or none of it. Jobs are created in the ledger
//! for chunks without a job of the current task version and published in confirmed
//! batches; a second run over the same corpus finds every job already published and
//! publishes nothing.

use indicatif::ProgressBar;
use relata_core::{Task, TaskVersion};
use relata_queue::Broker;
use relata_store::{
    ChunkSpan as StoreSpan, ErrorKind, JobToPublish, Store, StoreError, UpsertKind,
};

use relata_dispatch::{DispatchError, PUBLISH_BATCH, publish_jobs};
use relata_producer::chunk::chunk;
use relata_producer::corpus::{CorpusError, CorpusReader};

#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// The corpus's name; documents are keyed by (source, external id).
    pub source: String,
    pub max_chunk_bytes: usize,
    /// The extract task version jobs are created for.
    pub version: TaskVersion,
}

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct IngestSummary {
    pub new: u64,
    pub changed: u64,
    pub unchanged: u64,
    /// Bad input items (each reported with its file or line); the batch went on.
    pub bad_input: u64,
    /// Files the directory reader passed over (other extensions).
    pub skipped: u64,
    pub chunks: u64,
    pub jobs_published: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The corpus could not be read at all (not a bad item: the input itself).
    #[error("{0}")]
    Corpus(#[from] CorpusError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Dispatch(#[from] DispatchError),
    #[error("ingest needs an extract task version, got {0}")]
    WrongTask(Task),
}

/// One more item read: the spinner counts documents and shows the running totals.
fn tick(progress: &ProgressBar, summary: &IngestSummary) {
    progress.inc(1);
    if !progress.is_hidden() {
        progress.set_message(format!(
            "{} chunks, {} jobs published, {} bad input",
            summary.chunks, summary.jobs_published, summary.bad_input
        ));
    }
}

/// Ingest every document `reader` yields. Bad items are reported through `on_bad_input`
/// and counted; they never abort the batch.
pub async fn ingest(
    store: &Store,
    broker: &Broker,
    reader: CorpusReader,
    options: &IngestOptions,
    progress: &ProgressBar,
    mut on_bad_input: impl FnMut(&CorpusError),
) -> Result<IngestSummary, IngestError> {
    if options.version.task != Task::Extract {
        return Err(IngestError::WrongTask(options.version.task));
    }
    let mut summary = IngestSummary::default();
    let mut pending: Vec<JobToPublish> = Vec::new();
    let mut reader = reader;
    for item in reader.by_ref() {
        let doc = match item {
            Ok(doc) => doc,
            Err(e) if e.is_fatal() => return Err(e.into()),
            Err(e) => {
                summary.bad_input += 1;
                on_bad_input(&e);
                tick(progress, &summary);
                continue;
            }
        };
        let spans: Vec<StoreSpan> = chunk(&doc.text, options.max_chunk_bytes)
            .into_iter()
            .map(|s| StoreSpan {
                start: s.start,
                end: s.end,
            })
            .collect();
        let upserted = store
            .upsert_document(
                &options.source,
                &doc.external_id,
                doc.title.as_deref(),
                &doc.text,
                &spans,
            )
            .await;
        let outcome = match upserted {
            Ok(o) => o,
            // The readers refuse what the store cannot hold before any SQL; should a value
            // get past them, the store's refusal of this one document is still this
            // document's problem, not the run's.
            Err(e) if e.kind() == ErrorKind::InvalidInput => {
                summary.bad_input += 1;
                on_bad_input(&CorpusError::store_refused(&doc.external_id, e.to_string()));
                tick(progress, &summary);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        match outcome.kind {
            UpsertKind::New => summary.new += 1,
            UpsertKind::Changed => summary.changed += 1,
            UpsertKind::Unchanged => summary.unchanged += 1,
        }
        summary.chunks += outcome.chunk_ids.len() as u64;
        pending.extend(
            store
                .ensure_extract_jobs(&options.version, &outcome.chunk_ids)
                .await?,
        );
        if pending.len() >= PUBLISH_BATCH {
            summary.jobs_published += publish_jobs(store, broker, &pending).await? as u64;
            pending.clear();
        }
        tick(progress, &summary);
    }
    // Jobs left unpublished by an earlier, interrupted run of this version.
    pending.extend(store.unpublished_jobs(&options.version, i64::MAX).await?);
    pending.sort_by(|a, b| a.job_id.cmp(&b.job_id));
    pending.dedup_by(|a, b| a.job_id == b.job_id);
    summary.jobs_published += publish_jobs(store, broker, &pending).await? as u64;
    summary.skipped = reader.skipped();
    Ok(summary)
}
