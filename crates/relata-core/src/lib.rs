//! relata's domain vocabulary.
//!
//! Everything that becomes a metric label or a stored status is a closed enum defined
//! here, so that no other crate can invent a label value at run time (an error string as a
//! label is a cardinality bomb and an unqueryable store). The response contracts — what
//! the model is asked to return and the bounds the gate enforces — live here too, because
//! the gate, the model adapter (which sends them as JSON Schema) and the store all agree on
//! them and none of them should own the others.
//!
//! This crate does no IO and has no async.

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod closed;
pub mod contract;
pub mod dead;
pub mod handle;
pub mod job;
pub mod labels;
pub mod names;
pub mod promotion;
pub mod referents;
pub mod sentences;
pub mod settings;
pub mod task;
pub mod text;

pub use closed::UnknownLabel;
pub use contract::{
    ANSWER_V1, ANSWER_V2, CLASSIFY_V1, Contract, EXTRACT_V1, EXTRACT_V2, EXTRACT_V3, JOIN_V1,
};
pub use dead::DeadReason;
pub use handle::{Handle, HandleError, SourceHandle};
pub use job::{JobInput, JobInputError, JobMessage, JobMessageError};
pub use labels::{
    AnswerCheck, AnswerStatus, Check, EntityType, JoinVerdict, Reason, RelationKind, RowKind,
    Severity, Warning,
};
pub use promotion::{
    ActorKind, CandidateFacts, CandidateId, CandidateIdError, Decision, EvidenceDecision, Policy,
    PolicyDecision, PolicyError, PromotionState, Reviewer, ReviewerError, Reviewers, Rule, Verdict,
};
pub use task::{JobId, Task, TaskVersion};
