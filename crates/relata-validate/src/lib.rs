//! The untrusted-output gate.
//!
//! (crate docs: to be written with the implementation)

mod config;
mod outcome;

pub use config::{CheckSetting, ConfigError, GateConfig};
pub use outcome::{
    AcceptedClaim, AcceptedEntity, AcceptedRelation, ClassifyRows, ExtractRows, Finding, Judgement,
    Rejection, RowOutcome, RowStatus, Verdict,
};

use relata_core::Handle;
use std::collections::BTreeSet;

/// What a classify request showed the model: the handles sent and the ordered pairs asked
/// for. Both checks (`handle_known`, `pair_requested`) judge against this and nothing else.
#[derive(Debug, Clone, Default)]
pub struct ClassifyInput {
    pub handles: BTreeSet<Handle>,
    pub pairs: BTreeSet<(Handle, Handle)>,
}

/// Judge a raw extract response against the source text it was asked about.
pub fn judge_extract(config: &GateConfig, source: &str, raw: &[u8]) -> Judgement<ExtractRows> {
    let _ = (config, source, raw);
    unimplemented!("gate implementation pending")
}

/// Judge a raw classify response against what the request showed the model.
pub fn judge_classify(
    config: &GateConfig,
    input: &ClassifyInput,
    raw: &[u8],
) -> Judgement<ClassifyRows> {
    let _ = (config, input, raw);
    unimplemented!("gate implementation pending")
}
