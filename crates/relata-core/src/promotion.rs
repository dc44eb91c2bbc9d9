//! Promotion: the model proposes, relata decides, a named person approves.
//!
//! Every row the gate accepted is a *candidate*. A [`Policy`] — ordered rules that are
//! plain configuration — gives each candidate one [`PolicyDecision`]: `allow` promotes it,
//! `review` holds it for a person, `deny` refuses it. The first matching rule decides; a
//! candidate that no rule matches is held for review, never allowed. A person's
//! [`Decision`] (approve or reject) can only be made in the name of a [`Reviewer`], which
//! can only be obtained from the configured [`Reviewers`].
//!
//! This module decides; it stores nothing. The store writes each decision as an evidence
//! record.

use std::fmt;
use std::str::FromStr;

use crate::closed_enum;
use crate::labels::{EntityType, RelationKind, RowKind, Warning};

closed_enum! {
    /// What the policy says about a candidate. Stored on the evidence record and used as
    /// the `decision` label of `relata_promotion_decisions_total`.
    pub enum PolicyDecision: "policy decision" {
        /// Promote without a person.
        Allow = "allow",
        /// Hold for a named reviewer.
        Review = "review",
        /// Refuse; never promoted.
        Deny = "deny",
    }
}

closed_enum! {
    /// What a reviewer decides about a candidate held for review.
    pub enum Decision: "review decision" {
        Approve = "approve",
        Reject = "reject",
    }
}

closed_enum! {
    /// Every decision an evidence record can hold: the policy's and a person's. Also the
    /// `decision` label of `relata_promotion_decisions_total`.
    pub enum EvidenceDecision: "evidence decision" {
        Allow = "allow",
        Review = "review",
        Deny = "deny",
        Approve = "approve",
        Reject = "reject",
    }
}

impl From<PolicyDecision> for EvidenceDecision {
    fn from(d: PolicyDecision) -> Self {
        match d {
            PolicyDecision::Allow => EvidenceDecision::Allow,
            PolicyDecision::Review => EvidenceDecision::Review,
            PolicyDecision::Deny => EvidenceDecision::Deny,
        }
    }
}

impl From<Decision> for EvidenceDecision {
    fn from(d: Decision) -> Self {
        match d {
            Decision::Approve => EvidenceDecision::Approve,
            Decision::Reject => EvidenceDecision::Reject,
        }
    }
}

closed_enum! {
    /// Where a candidate stands. `proposed` is a candidate the policy has not yet seen;
    /// the others follow a decision.
    pub enum PromotionState: "promotion state" {
        /// Committed by a worker, not yet judged by the policy.
        Proposed = "proposed",
        /// The policy asked for a person; nobody has decided yet.
        Pending = "pending",
        /// Allowed by the policy or approved by a reviewer: export and answers use it.
        Promoted = "promoted",
        /// A reviewer rejected it.
        Rejected = "rejected",
        /// The policy refused it.
        Denied = "denied",
    }
}

impl PromotionState {
    /// The state a decision in the evidence log leaves its candidate in; a candidate's
    /// state is its latest record's. The one statement of this rule: the database's
    /// `relata_state_after` repeats it in SQL, and a store test holds that twin to this
    /// for every decision.
    pub const fn after(d: EvidenceDecision) -> PromotionState {
        match d {
            EvidenceDecision::Allow | EvidenceDecision::Approve => PromotionState::Promoted,
            EvidenceDecision::Review => PromotionState::Pending,
            EvidenceDecision::Deny => PromotionState::Denied,
            EvidenceDecision::Reject => PromotionState::Rejected,
        }
    }

    /// The state a policy decision leads to.
    pub fn after_policy(d: PolicyDecision) -> PromotionState {
        PromotionState::after(d.into())
    }

    /// The state a reviewer's decision leads to.
    pub fn after_review(d: Decision) -> PromotionState {
        PromotionState::after(d.into())
    }
}

closed_enum! {
    /// Who made a decision: a policy rule or a named reviewer.
    pub enum ActorKind: "actor kind" {
        Policy = "policy",
        Reviewer = "reviewer",
    }
}

/// The name of the built-in rule that applies when no configured rule matches.
pub const NO_RULE_MATCHED: &str = "no_rule_matched";
/// The name of the built-in rule that denies a candidate without its model call record.
pub const NO_PROVENANCE: &str = "no_provenance";
/// The name of the built-in rule that holds for a person a join of two entities of
/// different types, whatever rule would allow it: no rule joins across types.
pub const JOIN_ACROSS_TYPES: &str = "join_across_types";

/// What the policy knows about a candidate: only facts relata's own code established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateFacts {
    pub kind: RowKind,
    /// Warnings the gate attached to the row.
    pub warnings: Vec<Warning>,
    /// For an entity; for a join, the two mentions' type when they share one (`None`
    /// when they differ).
    pub entity_type: Option<EntityType>,
    /// For a relation.
    pub relation: Option<RelationKind>,
    /// The sources of the documents the row came from (two for a relation between
    /// documents of different sources).
    pub sources: Vec<String>,
    /// Whether the model call that proposed the row is on record with its full provenance
    /// (model, prompt version, schema id/version/sha256).
    pub has_provenance: bool,
}

/// One policy rule: every condition given must hold for the rule to match.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Named in every evidence record this rule decides.
    pub name: String,
    /// Row kind: entity, claim, relation or join.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<RowKind>,
    /// `true`: the row carries at least one warning; `false`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnings: Option<bool>,
    /// Entity type (entities only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity_type: Option<EntityType>,
    /// Relation kind (relations only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<RelationKind>,
    /// Document source: matches when every document the row came from has this source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub decision: PolicyDecision,
}

impl Rule {
    fn matches(&self, c: &CandidateFacts) -> bool {
        let has_warnings = !c.warnings.is_empty();
        self.kind.is_none_or(|k| k == c.kind)
            && self.warnings.is_none_or(|warned| warned == has_warnings)
            && self.entity_type.is_none_or(|t| c.entity_type == Some(t))
            && self.relation.is_none_or(|r| c.relation == Some(r))
            && self
                .source
                .as_ref()
                .is_none_or(|s| !c.sources.is_empty() && c.sources.iter().all(|cs| cs == s))
    }
}

/// A policy that cannot be used, with what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("policy rule {index}: the name is empty")]
    EmptyName { index: usize },
    #[error("policy rule {index}: the name {name:?} is used by an earlier rule")]
    DuplicateName { index: usize, name: String },
    #[error("policy rule {index} ({name}): the name {name:?} is reserved")]
    ReservedName { index: usize, name: String },
    #[error("policy rule {index} ({name}): {problem}")]
    Contradictory {
        index: usize,
        name: String,
        problem: &'static str,
    },
}

/// Why a candidate got its decision.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    pub decision: PolicyDecision,
    /// The rule that decided (a configured rule's name, [`NO_RULE_MATCHED`] or
    /// [`NO_PROVENANCE`]).
    pub rule: String,
    /// What about the candidate led here, in words a reviewer reads (the warnings, the
    /// relation kind, "no rule matched").
    pub reasons: Vec<String>,
}

/// The ordered rules. The first rule that matches decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    rules: Vec<Rule>,
}

impl Policy {
    /// Check and build a policy: names present and unique, no rule whose conditions
    /// could never hold together.
    pub fn new(rules: Vec<Rule>) -> Result<Policy, PolicyError> {
        for (i, r) in rules.iter().enumerate() {
            let index = i + 1;
            let name = r.name.trim();
            if name.is_empty() {
                return Err(PolicyError::EmptyName { index });
            }
            if [NO_RULE_MATCHED, NO_PROVENANCE, JOIN_ACROSS_TYPES].contains(&name) {
                return Err(PolicyError::ReservedName {
                    index,
                    name: name.to_owned(),
                });
            }
            if rules[..i].iter().any(|p| p.name.trim() == name) {
                return Err(PolicyError::DuplicateName {
                    index,
                    name: name.to_owned(),
                });
            }
            let contradiction = |problem| PolicyError::Contradictory {
                index,
                name: name.to_owned(),
                problem,
            };
            if r.entity_type.is_some() && r.relation.is_some() {
                return Err(contradiction(
                    "entity_type and relation can never both hold",
                ));
            }
            if r.entity_type.is_some()
                && r.kind
                    .is_some_and(|k| !matches!(k, RowKind::Entity | RowKind::Join))
            {
                return Err(contradiction(
                    "entity_type only applies to kind = \"entity\" or \"join\"",
                ));
            }
            if r.relation.is_some() && r.kind.is_some_and(|k| k != RowKind::Relation) {
                return Err(contradiction(
                    "relation only applies to kind = \"relation\"",
                ));
            }
            if r.source.as_deref().is_some_and(|s| s.trim().is_empty()) {
                return Err(contradiction("source is empty"));
            }
        }
        Ok(Policy { rules })
    }

    /// The shipped defaults: any row with a warning is reviewed; every relation is
    /// reviewed — a relation between two claims is the model's inference, a derived claim
    /// no source states, so a named person decides it (`supports` as much as
    /// `contradicts`); so is every join a model proposes; claims and entities without
    /// warnings are allowed.
    pub fn shipped() -> Policy {
        let rule = |name: &str, kind: Option<RowKind>, warnings: Option<bool>, decision| Rule {
            name: name.to_owned(),
            kind,
            warnings,
            entity_type: None,
            relation: None,
            source: None,
            decision,
        };
        use PolicyDecision::{Allow, Review};
        Policy::new(vec![
            rule("warnings", None, Some(true), Review),
            rule("relations", Some(RowKind::Relation), None, Review),
            rule("joins", Some(RowKind::Join), None, Review),
            rule("claims", Some(RowKind::Claim), Some(false), Allow),
            rule("entities", Some(RowKind::Entity), Some(false), Allow),
        ])
        .expect("the shipped policy is valid")
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Decide a candidate. A candidate without provenance is denied whatever the rules
    /// say; one that no rule matches is held for review, and so is a join across types
    /// that a rule would allow.
    pub fn evaluate(&self, c: &CandidateFacts) -> Verdict {
        if !c.has_provenance {
            return Verdict {
                decision: PolicyDecision::Deny,
                rule: NO_PROVENANCE.to_owned(),
                reasons: vec!["the model call that proposed it is not on record".to_owned()],
            };
        }
        let mut reasons: Vec<String> = c.warnings.iter().map(|w| format!("warning: {w}")).collect();
        if let Some(r) = c.relation {
            reasons.push(format!("relation: {r}"));
        }
        match self.rules.iter().find(|r| r.matches(c)) {
            Some(rule)
                if rule.decision == PolicyDecision::Allow
                    && c.kind == RowKind::Join
                    && c.entity_type.is_none() =>
            {
                reasons.push(format!(
                    "rule {} would allow it, but the two entities differ in type",
                    rule.name.trim()
                ));
                Verdict {
                    decision: PolicyDecision::Review,
                    rule: JOIN_ACROSS_TYPES.to_owned(),
                    reasons,
                }
            }
            Some(rule) => Verdict {
                decision: rule.decision,
                rule: rule.name.trim().to_owned(),
                reasons,
            },
            None => {
                reasons.push("no policy rule matched".to_owned());
                Verdict {
                    decision: PolicyDecision::Review,
                    rule: NO_RULE_MATCHED.to_owned(),
                    reasons,
                }
            }
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::shipped()
    }
}

/// A person allowed to approve and reject. Only [`Reviewers::get`] makes one, so a
/// decision in the name of someone not configured cannot be expressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reviewer(String);

impl Reviewer {
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Reviewer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a reviewer name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewerError {
    #[error("a reviewer must be named (--by \"Full Name\")")]
    Empty,
    #[error("{0:?} is not a configured reviewer ([review] reviewers or RELATA_REVIEWERS)")]
    Unknown(String),
    #[error("no reviewers are configured: set [review] reviewers or RELATA_REVIEWERS")]
    NoneConfigured,
    #[error("reviewer {0:?} is listed twice")]
    Duplicate(String),
}

/// The configured reviewer list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reviewers {
    names: Vec<String>,
}

impl Reviewers {
    /// Names are trimmed; an empty name or a name listed twice is refused.
    pub fn new<I, S>(names: I) -> Result<Reviewers, ReviewerError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut out: Vec<String> = Vec::new();
        for n in names {
            let n = n.as_ref().trim();
            if n.is_empty() {
                return Err(ReviewerError::Empty);
            }
            if out.iter().any(|o| o == n) {
                return Err(ReviewerError::Duplicate(n.to_owned()));
            }
            out.push(n.to_owned());
        }
        Ok(Reviewers { names: out })
    }

    /// The reviewer with exactly this name (surrounding whitespace ignored).
    pub fn get(&self, name: &str) -> Result<Reviewer, ReviewerError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(ReviewerError::Empty);
        }
        if self.names.is_empty() {
            return Err(ReviewerError::NoneConfigured);
        }
        self.names
            .iter()
            .find(|n| *n == name)
            .map(|n| Reviewer(n.clone()))
            .ok_or_else(|| ReviewerError::Unknown(relata_cut(name)))
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

fn relata_cut(s: &str) -> String {
    crate::text::cut(s, 80).to_owned()
}

/// A candidate's kind and id, printed `claim:42` and parsed back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CandidateId {
    pub kind: RowKind,
    pub id: i64,
}

impl fmt::Display for CandidateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.id)
    }
}

/// A string that is not a candidate id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a candidate id: expected KIND:ID such as claim:42, entity:7, relation:9 or join:3"
)]
pub struct CandidateIdError(String);

impl FromStr for CandidateId {
    type Err = CandidateIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || CandidateIdError(relata_cut(s));
        let (kind, id) = s.trim().split_once(':').ok_or_else(bad)?;
        let kind: RowKind = kind.parse().map_err(|_| bad())?;
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let id: i64 = id.parse().map_err(|_| bad())?;
        if id <= 0 {
            return Err(bad());
        }
        Ok(CandidateId { kind, id })
    }
}

impl serde::Serialize for CandidateId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for CandidateId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(kind: RowKind) -> CandidateFacts {
        CandidateFacts {
            kind,
            warnings: vec![],
            entity_type: None,
            relation: None,
            sources: vec!["wiki".to_owned()],
            has_provenance: true,
        }
    }

    fn relation(r: RelationKind) -> CandidateFacts {
        CandidateFacts {
            relation: Some(r),
            ..facts(RowKind::Relation)
        }
    }

    #[test]
    fn shipped_policy_allows_clean_rows_and_reviews_warnings_and_every_relation() {
        let p = Policy::shipped();
        let d = |c: &CandidateFacts| p.evaluate(c).decision;
        assert_eq!(d(&facts(RowKind::Claim)), PolicyDecision::Allow);
        let entity = CandidateFacts {
            entity_type: Some(EntityType::Person),
            ..facts(RowKind::Entity)
        };
        assert_eq!(d(&entity), PolicyDecision::Allow);
        let warned = CandidateFacts {
            warnings: vec![Warning::FigureNotInQuote],
            ..facts(RowKind::Claim)
        };
        let v = p.evaluate(&warned);
        assert_eq!(v.decision, PolicyDecision::Review);
        assert_eq!(v.rule, "warnings");
        assert_eq!(v.reasons, ["warning: figure_not_in_quote"]);
        for r in RelationKind::ALL {
            let v = p.evaluate(&relation(*r));
            assert_eq!(v.decision, PolicyDecision::Review, "{r}");
            assert_eq!(v.rule, "relations", "{r}");
        }
        let warned_relation = CandidateFacts {
            warnings: vec![Warning::Demoted],
            ..relation(RelationKind::Supports)
        };
        assert_eq!(d(&warned_relation), PolicyDecision::Review);
    }

    #[test]
    fn a_join_is_held_for_a_person_and_never_allowed_across_types() {
        let same = CandidateFacts {
            entity_type: Some(EntityType::Event),
            ..facts(RowKind::Join)
        };
        let across = facts(RowKind::Join);
        let v = Policy::shipped().evaluate(&same);
        assert_eq!(
            (v.decision, v.rule.as_str()),
            (PolicyDecision::Review, "joins")
        );
        // A configured rule may allow joins of one type; across types a person decides
        // whatever it says.
        let allow = |entity_type| Rule {
            name: "joins-allowed".into(),
            kind: Some(RowKind::Join),
            warnings: None,
            entity_type,
            relation: None,
            source: None,
            decision: PolicyDecision::Allow,
        };
        let p = Policy::new(vec![allow(None)]).unwrap();
        assert_eq!(p.evaluate(&same).decision, PolicyDecision::Allow);
        let v = p.evaluate(&across);
        assert_eq!(v.decision, PolicyDecision::Review);
        assert_eq!(v.rule, JOIN_ACROSS_TYPES);
        assert!(v.reasons[0].contains("differ in type"), "{:?}", v.reasons);
        let typed = Policy::new(vec![allow(Some(EntityType::Event))]).unwrap();
        assert_eq!(typed.evaluate(&same).decision, PolicyDecision::Allow);
        assert_eq!(typed.evaluate(&across).rule, NO_RULE_MATCHED);
        let reserved = Rule {
            name: JOIN_ACROSS_TYPES.into(),
            ..allow(None)
        };
        assert!(matches!(
            Policy::new(vec![reserved]),
            Err(PolicyError::ReservedName { .. })
        ));
    }

    #[test]
    fn a_candidate_no_rule_matches_is_reviewed_never_allowed() {
        let p = Policy::new(vec![Rule {
            name: "only-people".into(),
            kind: Some(RowKind::Entity),
            warnings: None,
            entity_type: Some(EntityType::Person),
            relation: None,
            source: None,
            decision: PolicyDecision::Allow,
        }])
        .unwrap();
        let v = p.evaluate(&facts(RowKind::Claim));
        assert_eq!(v.decision, PolicyDecision::Review);
        assert_eq!(v.rule, NO_RULE_MATCHED);
        assert!(v.reasons.iter().any(|r| r.contains("no policy rule")));
        // An empty policy reviews everything.
        let empty = Policy::new(vec![]).unwrap();
        assert_eq!(
            empty.evaluate(&facts(RowKind::Entity)).decision,
            PolicyDecision::Review
        );
    }

    #[test]
    fn a_candidate_without_provenance_is_denied_whatever_the_rules_say() {
        let allow_all = Policy::new(vec![Rule {
            name: "everything".into(),
            kind: None,
            warnings: None,
            entity_type: None,
            relation: None,
            source: None,
            decision: PolicyDecision::Allow,
        }])
        .unwrap();
        let c = CandidateFacts {
            has_provenance: false,
            ..facts(RowKind::Claim)
        };
        let v = allow_all.evaluate(&c);
        assert_eq!(v.decision, PolicyDecision::Deny);
        assert_eq!(v.rule, NO_PROVENANCE);
    }

    #[test]
    fn the_first_matching_rule_decides_and_source_must_hold_for_every_document() {
        let rules: Vec<Rule> = serde_json::from_str(
            r#"[{"name": "untrusted", "source": "forum", "decision": "deny"},
                {"name": "rest", "decision": "allow"}]"#,
        )
        .unwrap();
        let p = Policy::new(rules).unwrap();
        let forum = CandidateFacts {
            sources: vec!["forum".into()],
            ..facts(RowKind::Claim)
        };
        assert_eq!(p.evaluate(&forum).decision, PolicyDecision::Deny);
        let mixed = CandidateFacts {
            sources: vec!["forum".into(), "wiki".into()],
            ..relation(RelationKind::Supports)
        };
        let v = p.evaluate(&mixed);
        assert_eq!(
            (v.decision, v.rule.as_str()),
            (PolicyDecision::Allow, "rest")
        );
    }

    #[test]
    fn bad_policies_are_refused_naming_the_rule() {
        let base = Rule {
            name: "r".into(),
            kind: None,
            warnings: None,
            entity_type: None,
            relation: None,
            source: None,
            decision: PolicyDecision::Allow,
        };
        let err = Policy::new(vec![Rule {
            name: " ".into(),
            ..base.clone()
        }])
        .unwrap_err();
        assert_eq!(err, PolicyError::EmptyName { index: 1 });
        let err = Policy::new(vec![base.clone(), base.clone()]).unwrap_err();
        assert!(err.to_string().contains("rule 2"), "{err}");
        let err = Policy::new(vec![Rule {
            kind: Some(RowKind::Claim),
            relation: Some(RelationKind::Supports),
            ..base.clone()
        }])
        .unwrap_err();
        assert!(err.to_string().contains("relation only applies"), "{err}");
        let err = Policy::new(vec![Rule {
            name: NO_RULE_MATCHED.into(),
            ..base.clone()
        }])
        .unwrap_err();
        assert!(matches!(err, PolicyError::ReservedName { .. }));
        // Unknown fields and unknown values do not parse.
        let unknown_field: Result<Rule, _> =
            serde_json::from_str(r#"{"name":"x","decision":"allow","kinds":"claim"}"#);
        assert!(unknown_field.is_err());
        let unknown_decision: Result<Rule, _> =
            serde_json::from_str(r#"{"name":"x","decision":"maybe"}"#);
        assert!(unknown_decision.is_err());
    }

    #[test]
    fn only_configured_reviewers_can_decide() {
        let r = Reviewers::new(["Ada Lovelace", " Grace Hopper "]).unwrap();
        assert_eq!(r.get("Grace Hopper").unwrap().name(), "Grace Hopper");
        assert_eq!(
            r.get("ada lovelace"),
            Err(ReviewerError::Unknown("ada lovelace".into()))
        );
        assert_eq!(r.get("  "), Err(ReviewerError::Empty));
        assert_eq!(r.get(""), Err(ReviewerError::Empty));
        assert_eq!(
            Reviewers::default().get("Ada Lovelace"),
            Err(ReviewerError::NoneConfigured)
        );
        assert_eq!(
            Reviewers::new(["Ada", "Ada"]),
            Err(ReviewerError::Duplicate("Ada".into()))
        );
        assert_eq!(Reviewers::new(["Ada", ""]), Err(ReviewerError::Empty));
    }

    #[test]
    fn candidate_ids_round_trip_and_bad_ones_are_named() {
        for s in ["claim:42", "entity:7", "relation:9"] {
            let id: CandidateId = s.parse().unwrap();
            assert_eq!(id.to_string(), s);
        }
        for bad in [
            "claim", "claim:", "claim:-1", "claim:0", "claims:1", "claim:1x", ":1", "claim:+1",
        ] {
            let err = bad.parse::<CandidateId>().unwrap_err();
            assert!(err.to_string().contains("KIND:ID"), "{bad}: {err}");
        }
    }

    #[test]
    fn states_follow_decisions() {
        assert_eq!(
            PromotionState::after_policy(PolicyDecision::Allow),
            PromotionState::Promoted
        );
        assert_eq!(
            PromotionState::after_policy(PolicyDecision::Review),
            PromotionState::Pending
        );
        assert_eq!(
            PromotionState::after_policy(PolicyDecision::Deny),
            PromotionState::Denied
        );
        assert_eq!(
            PromotionState::after_review(Decision::Reject),
            PromotionState::Rejected
        );
        assert_eq!(
            EvidenceDecision::from(Decision::Approve),
            EvidenceDecision::Approve
        );
    }
}
