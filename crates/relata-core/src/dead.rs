//! Why a job was dead-lettered.

use crate::closed_enum;

closed_enum! {
    /// Why a job ended in the dead-letter queue instead of completing.
    ///
    /// Carried in the `x-relata-dead-reason` header of a dead-lettered message and used as
    /// the `reason` label of `relata_jobs_dead_lettered_total`. The human-readable detail
    /// travels beside it in its own bounded header, never inside it.
    pub enum DeadReason: "dead_reason" {
        /// Transport failures outlasted the in-process retries and every delayed requeue.
        TransportExhausted = "transport_exhausted",
        /// The provider refused the request for good (400, 401, 403, 404, 413, 422).
        PermanentProvider = "permanent_provider",
        /// The job message itself cannot be decoded; retrying cannot help.
        Poison = "poison",
        /// The job names input (a document, a chunk, a claim) that does not exist.
        MissingInput = "missing_input",
        /// The broker gave up: the message was delivered more times than the queue's
        /// `x-delivery-limit` without being settled (it keeps killing workers).
        DeliveryLimit = "delivery_limit",
        /// The job belongs to a task version (prompt, schema, model) other than the one
        /// this worker runs. Processing it would store rows under a provenance the job
        /// never asked for; a backfill for the current version creates its own jobs.
        VersionMismatch = "version_mismatch",
        /// The store refused the job's outcome for a reason other than availability (a
        /// data exception, a violated constraint). Trying again would refuse it again, and
        /// would ask the model again; the detail says what was refused.
        StoreRejected = "store_rejected",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_its_label() {
        for r in DeadReason::ALL {
            assert_eq!(r.as_str().parse::<DeadReason>(), Ok(*r));
        }
        assert!("nope".parse::<DeadReason>().is_err());
    }
}
