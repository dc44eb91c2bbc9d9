//! relata-dispatch: publishing jobs that the ledger says are not yet on the broker.
//!
//! Both `relata ingest` (extract jobs) and the extractor (classify jobs for candidate
//! pairs) publish ledger jobs; this crate is where they meet, so that neither depends on
//! the other. It knows the store's ledger and the broker's confirmed publishing, and
//! nothing of corpora, models or the gate.
//!
//! The ledger row is written first (by the store, in the same transaction as its input),
//! then the message is published with confirms, then the row is marked published. A crash
//! between the last two steps publishes the job again on the next run — harmless, because
//! a worker acks a job whose outcome is already committed without calling the model — and
//! a crash before publishing leaves the row unpublished, so the next run finds it. Nothing
//! is lost in either order.

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use relata_queue::{Broker, OutgoingJob, QueueError};
use relata_store::{JobToPublish, Store, StoreError};

/// How many jobs are published per confirmed batch.
pub const PUBLISH_BATCH: usize = 500;

#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error("publishing to the broker failed: {0}")]
    Queue(#[from] QueueError),
    #[error("recording publication in the store failed: {0}")]
    Store(#[from] StoreError),
}

impl DispatchError {
    pub fn is_retryable(&self) -> bool {
        match self {
            DispatchError::Queue(e) => e.is_retryable(),
            DispatchError::Store(e) => e.is_retryable(),
        }
    }
}

/// Publish `jobs` in confirmed batches and mark each batch published. Returns how many
/// were published.
pub async fn publish_jobs(
    store: &Store,
    broker: &Broker,
    jobs: &[JobToPublish],
) -> Result<usize, DispatchError> {
    let mut published = 0;
    for batch in jobs.chunks(PUBLISH_BATCH) {
        let outgoing: Vec<OutgoingJob> = batch
            .iter()
            .map(|j| OutgoingJob {
                task: j.task(),
                job_id: j.job_id.clone(),
                payload: j.message().encode(),
            })
            .collect();
        broker.publish_batch(&outgoing).await?;
        let ids: Vec<_> = batch.iter().map(|j| j.job_id.clone()).collect();
        store.mark_published(&ids).await?;
        published += batch.len();
    }
    Ok(published)
}
