//! What the gate returns. Accepted rows can only be built inside this crate: a model
//! response reaches the store only through these types.

use relata_core::{EntityType, Handle, Reason, RelationKind, RowKind, Task, Warning};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every row accepted (or a valid response with no rows).
    Accepted,
    /// At least one row accepted and at least one rejected.
    Partial,
    /// The response was rejected whole, or every row was.
    Rejected,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    Accepted,
    Rejected,
}

/// A warning on a kept row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    pub warning: Warning,
    /// For a demoted check: the reason it would have rejected with.
    pub reason: Option<Reason>,
    /// Bounded, human-readable; never a metric label.
    pub detail: String,
}

/// The verdict on one row, in response order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowOutcome {
    pub kind: RowKind,
    /// Position in the response array of its kind.
    pub index: usize,
    pub decision: RowDecision,
}

/// What the gate decided about one row. A rejected row always has its reason: there is no
/// state in which a row is rejected for nothing, or accepted with a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowDecision {
    Accepted {
        warnings: Vec<Finding>,
        /// For claims: the byte offsets of the quote in the source.
        quote_span: Option<(usize, usize)>,
    },
    Rejected {
        reason: Reason,
        /// Bounded, human-readable; never a metric label.
        detail: String,
    },
}

impl RowOutcome {
    pub fn status(&self) -> RowStatus {
        match self.decision {
            RowDecision::Accepted { .. } => RowStatus::Accepted,
            RowDecision::Rejected { .. } => RowStatus::Rejected,
        }
    }

    /// Why the row was rejected; `None` for an accepted row.
    pub fn reason(&self) -> Option<Reason> {
        match self.decision {
            RowDecision::Accepted { .. } => None,
            RowDecision::Rejected { reason, .. } => Some(reason),
        }
    }

    /// The rejection's detail; `None` for an accepted row.
    pub fn detail(&self) -> Option<&str> {
        match &self.decision {
            RowDecision::Accepted { .. } => None,
            RowDecision::Rejected { detail, .. } => Some(detail),
        }
    }

    /// An accepted row's warnings (a rejected row has none).
    pub fn warnings(&self) -> &[Finding] {
        match &self.decision {
            RowDecision::Accepted { warnings, .. } => warnings,
            RowDecision::Rejected { .. } => &[],
        }
    }

    /// For an accepted claim: the byte offsets of the quote in the source.
    pub fn quote_span(&self) -> Option<(usize, usize)> {
        match self.decision {
            RowDecision::Accepted { quote_span, .. } => quote_span,
            RowDecision::Rejected { .. } => None,
        }
    }

    /// The row's rejection, when it was rejected.
    pub fn rejection(&self) -> Option<Rejection> {
        match &self.decision {
            RowDecision::Accepted { .. } => None,
            RowDecision::Rejected { reason, detail } => Some(Rejection {
                kind: Some(self.kind),
                index: Some(self.index),
                reason: *reason,
                detail: detail.clone(),
            }),
        }
    }
}

/// A rejection of the whole response (`kind`/`index` empty) or of one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub kind: Option<RowKind>,
    pub index: Option<usize>,
    pub reason: Reason,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedEntity {
    pub(crate) index: usize,
    pub(crate) name: String,
    pub(crate) entity_type: EntityType,
    pub(crate) warnings: Vec<Finding>,
}

impl AcceptedEntity {
    pub fn index(&self) -> usize {
        self.index
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn entity_type(&self) -> EntityType {
        self.entity_type
    }
    pub fn warnings(&self) -> &[Finding] {
        &self.warnings
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedClaim {
    pub(crate) index: usize,
    pub(crate) statement: String,
    /// The source's own text at `quote_start..quote_end`, not the model's spelling.
    pub(crate) quote: String,
    pub(crate) quote_start: usize,
    pub(crate) quote_end: usize,
    /// The accepted entity the subject resolved to (its name as the response spelled it
    /// in the entity row).
    pub(crate) subject: String,
    pub(crate) subject_entity_index: Option<usize>,
    pub(crate) warnings: Vec<Finding>,
}

impl AcceptedClaim {
    pub fn index(&self) -> usize {
        self.index
    }
    pub fn statement(&self) -> &str {
        &self.statement
    }
    pub fn quote(&self) -> &str {
        &self.quote
    }
    /// Byte offsets (UTF-8) of the quote in the source text.
    pub fn quote_span(&self) -> (usize, usize) {
        (self.quote_start, self.quote_end)
    }
    pub fn subject(&self) -> &str {
        &self.subject
    }
    /// Index of the accepted entity row the subject resolved to, if the subject check ran.
    pub fn subject_entity_index(&self) -> Option<usize> {
        self.subject_entity_index
    }
    pub fn warnings(&self) -> &[Finding] {
        &self.warnings
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedRelation {
    pub(crate) index: usize,
    pub(crate) a: Handle,
    pub(crate) b: Handle,
    pub(crate) relation: RelationKind,
    pub(crate) warnings: Vec<Finding>,
}

impl AcceptedRelation {
    pub fn index(&self) -> usize {
        self.index
    }
    pub fn pair(&self) -> (Handle, Handle) {
        (self.a, self.b)
    }
    pub fn relation(&self) -> RelationKind {
        self.relation
    }
    pub fn warnings(&self) -> &[Finding] {
        &self.warnings
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtractRows {
    pub(crate) entities: Vec<AcceptedEntity>,
    pub(crate) claims: Vec<AcceptedClaim>,
}

impl ExtractRows {
    pub fn entities(&self) -> &[AcceptedEntity] {
        &self.entities
    }
    pub fn claims(&self) -> &[AcceptedClaim] {
        &self.claims
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassifyRows {
    pub(crate) relations: Vec<AcceptedRelation>,
}

impl ClassifyRows {
    pub fn relations(&self) -> &[AcceptedRelation] {
        &self.relations
    }
}

/// The gate's answer for one response: every row judged, everything found returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement<R> {
    pub(crate) task: Task,
    /// Set when the whole response was rejected.
    pub(crate) response_rejection: Option<Rejection>,
    pub(crate) rows: Vec<RowOutcome>,
    pub(crate) accepted: R,
}

impl<R> Judgement<R> {
    pub fn task(&self) -> Task {
        self.task
    }

    pub fn verdict(&self) -> Verdict {
        if self.response_rejection.is_some() {
            return Verdict::Rejected;
        }
        let accepted = self
            .rows
            .iter()
            .filter(|r| r.status() == RowStatus::Accepted)
            .count();
        let rejected = self.rows.len() - accepted;
        match (accepted, rejected) {
            (_, 0) => Verdict::Accepted,
            (0, _) => Verdict::Rejected,
            _ => Verdict::Partial,
        }
    }

    /// The whole-response rejection, if any.
    pub fn response_rejection(&self) -> Option<&Rejection> {
        self.response_rejection.as_ref()
    }

    /// Per-row outcomes in response order (entities, then claims; or relations).
    pub fn rows(&self) -> &[RowOutcome] {
        &self.rows
    }

    /// Every rejection: the response-level one, or one per rejected row. Each becomes one
    /// increment of `relata_model_invalid_output_total` and one stored row.
    pub fn rejections(&self) -> Vec<Rejection> {
        if let Some(r) = &self.response_rejection {
            return vec![r.clone()];
        }
        self.rows.iter().filter_map(RowOutcome::rejection).collect()
    }

    /// The validated rows, for the store.
    pub fn accepted(&self) -> &R {
        &self.accepted
    }
}

/// The machine-readable summary of a [`Judgement`], as `relata check` prints it:
/// `{"task", "verdict", "reason", "rows": [{"kind", "index", "status", "reason",
/// "warnings", "quote_start"?, "quote_end"?}]}`. Details are not part of it (they are
/// for humans and go to stderr); [`Judgement::rejections`] carries them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    pub task: Task,
    pub verdict: Verdict,
    /// Set when the whole response was rejected.
    pub reason: Option<Reason>,
    pub rows: Vec<ReportRow>,
}

/// One row of a [`Report`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReportRow {
    pub kind: RowKind,
    pub index: usize,
    pub status: RowStatus,
    pub reason: Option<Reason>,
    pub warnings: Vec<Finding>,
    /// For accepted claims only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote_start: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote_end: Option<usize>,
}

impl<R> Judgement<R> {
    /// The summary `relata check` prints.
    pub fn report(&self) -> Report {
        Report {
            task: self.task,
            verdict: self.verdict(),
            reason: self.response_rejection.as_ref().map(|r| r.reason),
            rows: self
                .rows
                .iter()
                .map(|r| ReportRow {
                    kind: r.kind,
                    index: r.index,
                    status: r.status(),
                    reason: r.reason(),
                    warnings: r.warnings().to_vec(),
                    quote_start: r.quote_span().map(|s| s.0),
                    quote_end: r.quote_span().map(|s| s.1),
                })
                .collect(),
        }
    }
}
