//! Layers 2–4: the strict typed decode of the contract and the row-level checks.

use std::collections::{HashMap, HashSet};

use relata_core::contract::bounds;
use relata_core::{
    Check, EntityType, Handle, Reason, RelationKind, RowKind, Severity, Task, Warning,
};

use crate::ClassifyInput;
use crate::config::GateConfig;
use crate::decode::{self, Json};
use crate::normalize::{SourceIndex, collapse, collapse_cow, lower};
use crate::outcome::{
    AcceptedClaim, AcceptedEntity, AcceptedRelation, ClassifyRows, ExtractRows, Finding, Judgement,
    Rejection, RowDecision, RowOutcome,
};
use crate::support::{ClaimText, Support, SupportOpinion};
use crate::text::{bounded, degenerate, excerpt, figures_not_in};

/// A failed check: the reason and a bounded detail.
pub(crate) type Fail = (Reason, String);

pub(crate) fn fail<T>(reason: Reason, detail: String) -> Result<T, Fail> {
    Err((reason, bounded(detail)))
}

/// The fields of an object with exactly `names`: a repeated key is refused first, then an
/// unknown field, then a missing one; the values come back in `names` order.
pub(crate) fn fields<'j, 'a, const N: usize>(
    v: &'j Json<'a>,
    what: &str,
    names: [&str; N],
) -> Result<[&'j Json<'a>; N], Fail> {
    let Json::Object(obj) = v else {
        return fail(
            Reason::Schema,
            format!("{what} is {}, not an object", v.type_name()),
        );
    };
    if let Some(k) = &obj.duplicate {
        return fail(
            Reason::Schema,
            format!("{what} repeats the key {}", excerpt(k, 40)),
        );
    }
    let entries = &obj.entries;
    if let Some((k, _)) = entries.iter().find(|(k, _)| !names.contains(&k.as_ref())) {
        return fail(
            Reason::UnknownField,
            format!("{what} has an unknown field {}", excerpt(k, 40)),
        );
    }
    let mut out = [&Json::Null; N];
    for (slot, name) in out.iter_mut().zip(names) {
        match entries.iter().find(|(k, _)| k == name) {
            Some((_, v)) => *slot = v,
            None => return fail(Reason::Schema, format!("{what} is missing field {name:?}")),
        }
    }
    Ok(out)
}

pub(crate) fn array<'j, 'a>(
    v: &'j Json<'a>,
    name: &str,
    max: usize,
) -> Result<&'j [Json<'a>], Fail> {
    match v {
        Json::Array(items) if items.len() <= max => Ok(items),
        Json::Array(items) => fail(
            Reason::Schema,
            format!(
                "{name:?} has {} items, over the bound of {max}",
                items.len()
            ),
        ),
        other => fail(
            Reason::Schema,
            format!("{name:?} is {}, not an array", other.type_name()),
        ),
    }
}

pub(crate) fn string<'j>(v: &'j Json<'_>, name: &str, max_chars: usize) -> Result<&'j str, Fail> {
    let Json::Str(s) = v else {
        return fail(
            Reason::Schema,
            format!("{name:?} is {}, not a string", v.type_name()),
        );
    };
    // Before any other check: the store cannot hold a NUL, and a row it cannot hold must
    // be rejected here, once, not fail its commit on every attempt.
    if let Some(at) = s.find('\0') {
        return fail(
            Reason::Unstorable,
            format!("{name:?} holds a NUL character (U+0000) at byte {at}"),
        );
    }
    // Cheap upper bound first: a string of at most max bytes has at most max chars.
    if s.len() > max_chars {
        let n = s.chars().count();
        if n > max_chars {
            return fail(
                Reason::Schema,
                format!("{name:?} is {n} characters, over the bound of {max_chars}"),
            );
        }
    }
    Ok(s)
}

fn closed<T: std::str::FromStr>(s: &str, name: &str) -> Result<T, Fail> {
    s.parse().or_else(|_| {
        fail(
            Reason::BadEnum,
            format!(
                "{name:?} {} is not one of the allowed values",
                excerpt(s, 30)
            ),
        )
    })
}

/// Runs the configurable checks of one row and collects its findings.
struct Row<'c> {
    config: &'c GateConfig,
    warnings: Vec<Finding>,
}

impl<'c> Row<'c> {
    fn new(config: &'c GateConfig) -> Self {
        Row {
            config,
            warnings: Vec::new(),
        }
    }

    /// Whether `check` is enabled at all (a disabled check is not run).
    fn enabled(&self, check: Check) -> bool {
        self.config.setting(check).enabled
    }

    /// Run `check`: `problem` returns a detail when the row fails it. Disabled: not run.
    /// Severity `reject`: the row fails with `reason`. Severity `warn`: the row is kept
    /// with a `demoted` finding naming `reason`.
    fn check(
        &mut self,
        check: Check,
        reason: Reason,
        problem: impl FnOnce() -> Option<String>,
    ) -> Result<(), Fail> {
        let setting = self.config.setting(check);
        if !setting.enabled {
            return Ok(());
        }
        match problem() {
            None => Ok(()),
            Some(detail) => match setting.severity {
                Severity::Reject => fail(reason, detail),
                Severity::Warn => {
                    self.warnings.push(Finding {
                        warning: Warning::Demoted,
                        reason: Some(reason),
                        detail: bounded(detail),
                    });
                    Ok(())
                }
            },
        }
    }
}

/// A checked row's outcome: accepted with its findings, or rejected with its reason.
fn outcome(
    kind: RowKind,
    index: usize,
    result: Result<Vec<Finding>, Fail>,
    quote_span: Option<(usize, usize)>,
) -> RowOutcome {
    let decision = match result {
        Ok(warnings) => RowDecision::Accepted {
            warnings,
            quote_span,
        },
        Err((reason, detail)) => RowDecision::Rejected { reason, detail },
    };
    RowOutcome {
        kind,
        index,
        decision,
    }
}

fn whole<R: Default>(task: Task, (reason, detail): Fail) -> Judgement<R> {
    Judgement {
        task,
        response_rejection: Some(Rejection {
            kind: None,
            index: None,
            reason,
            detail,
        }),
        rows: Vec::new(),
        accepted: R::default(),
    }
}

fn top<'j, 'a, const N: usize>(
    raw: &'a [u8],
    doc: &'j mut Option<Json<'a>>,
    names: [&str; N],
) -> Result<[&'j Json<'a>; N], Fail> {
    let v = decode::parse(raw).map_err(|e| (e.reason, e.detail))?;
    let v = doc.insert(v);
    fields(v, "the response", names)
}

pub(crate) fn judge_extract(
    config: &GateConfig,
    source: &str,
    raw: &[u8],
    opinion: Option<&dyn SupportOpinion>,
) -> Judgement<ExtractRows> {
    let mut doc = None;
    let parsed = top(raw, &mut doc, ["entities", "claims"]).and_then(|[e, c]| {
        Ok((
            array(e, "entities", bounds::MAX_ENTITIES)?,
            array(c, "claims", bounds::MAX_CLAIMS)?,
        ))
    });
    let (entities, claims) = match parsed {
        Ok(x) => x,
        Err(f) => return whole(Task::Extract, f),
    };

    let mut rows = Vec::with_capacity(entities.len() + claims.len());
    let mut accepted = ExtractRows::default();
    let mut seen = EntitiesSeen::default();
    for (index, v) in entities.iter().enumerate() {
        let mut row = Row::new(config);
        let result = check_entity(&mut row, v, &seen).map(|found| {
            accepted.entities.push(AcceptedEntity {
                index,
                name: found.name.to_owned(),
                entity_type: found.entity_type,
                warnings: row.warnings.clone(),
            });
            seen.record(found.key, accepted.entities.len() - 1);
            row.warnings
        });
        rows.push(outcome(RowKind::Entity, index, result, None));
    }

    let claim_source = ClaimSource {
        text: source,
        index: (!claims.is_empty()).then(|| SourceIndex::new(source)),
        support: Support::new(config.support(), source),
        opinion,
    };
    let mut seen_claims = ClaimsSeen::default();
    for (index, v) in claims.iter().enumerate() {
        let mut row = Row::new(config);
        let result = check_claim(&mut row, v, &claim_source, &seen.by_name, &seen_claims);
        let span = result.as_ref().ok().map(|found| found.span);
        let result = result.map(|found| {
            let (start, end) = found.span;
            let (subject, subject_entity_index) = match found.subject_at {
                Some(at) => {
                    let e = &accepted.entities[at];
                    (e.name.clone(), Some(e.index))
                }
                None => (found.subject.to_owned(), None),
            };
            seen_claims.record(found.key);
            accepted.claims.push(AcceptedClaim {
                index,
                statement: found.statement.to_owned(),
                quote: source[start..end].to_owned(),
                quote_start: start,
                quote_end: end,
                subject,
                subject_entity_index,
                warnings: row.warnings.clone(),
            });
            row.warnings
        });
        rows.push(outcome(RowKind::Claim, index, result, span));
    }

    Judgement {
        task: Task::Extract,
        response_rejection: None,
        rows,
        accepted,
    }
}

/// The entities accepted so far in one response, as later rows are judged against them.
#[derive(Default)]
struct EntitiesSeen {
    /// Normalised, lowercased name -> index in the accepted entities; the first wins.
    by_name: HashMap<String, usize>,
    /// (normalised lowercased name, type) of every accepted entity.
    keys: HashSet<(String, EntityType)>,
}

impl EntitiesSeen {
    fn record(&mut self, key: (String, EntityType), at: usize) {
        self.by_name.entry(key.0.clone()).or_insert(at);
        self.keys.insert(key);
    }
}

/// An entity row that passed every check.
struct EntityFound<'j> {
    name: &'j str,
    entity_type: EntityType,
    /// Normalised, lowercased name and type: what makes two entities the same.
    key: (String, EntityType),
}

fn check_entity<'j>(
    row: &mut Row<'_>,
    v: &'j Json<'_>,
    seen: &EntitiesSeen,
) -> Result<EntityFound<'j>, Fail> {
    let [name, ty] = fields(v, "the entity", ["name", "type"])?;
    let name = string(name, "name", bounds::NAME_MAX_CHARS)?;
    let ty = string(ty, "type", usize::MAX)?;
    let ty: EntityType = closed(ty, "type")?;
    let n_name = collapse(name);
    row.check(Check::Degenerate, Reason::Degenerate, || {
        degenerate(&n_name, bounds::NAME_MIN_CHARS, 1).map(|d| format!("name: {d}"))
    })?;
    let key = (lower(&n_name), ty);
    row.check(Check::NoDuplicate, Reason::Duplicate, || {
        seen.keys
            .contains(&key)
            .then(|| format!("repeats an earlier entity {} ({ty})", excerpt(name, 40)))
    })?;
    Ok(EntityFound {
        name,
        entity_type: ty,
        key,
    })
}

/// What every claim of one response is judged against.
struct ClaimSource<'s> {
    text: &'s str,
    /// Built only when the response has claims.
    index: Option<SourceIndex<'s>>,
    support: Support<'s>,
    opinion: Option<&'s dyn SupportOpinion>,
}

/// The claims accepted so far: quote span -> normalised lowercased statements.
#[derive(Default)]
struct ClaimsSeen(HashMap<(usize, usize), Vec<String>>);

impl ClaimsSeen {
    fn contains(&self, key: &ClaimKey) -> bool {
        self.0
            .get(&key.span)
            .is_some_and(|v| v.contains(&key.statement))
    }

    fn record(&mut self, key: ClaimKey) {
        self.0.entry(key.span).or_default().push(key.statement);
    }
}

/// What makes two claims the same: the quote's span and the normalised statement.
struct ClaimKey {
    span: (usize, usize),
    statement: String,
}

/// A claim row that passed every check.
struct ClaimFound<'j> {
    statement: &'j str,
    subject: &'j str,
    /// Byte offsets of the quote in the source.
    span: (usize, usize),
    /// Index (among the accepted entities) of the entity the subject names, when the
    /// subject check ran and found one.
    subject_at: Option<usize>,
    key: ClaimKey,
}

fn check_claim<'j>(
    row: &mut Row<'_>,
    v: &'j Json<'_>,
    source: &ClaimSource<'_>,
    entities_by_name: &HashMap<String, usize>,
    seen: &ClaimsSeen,
) -> Result<ClaimFound<'j>, Fail> {
    let [statement, quote, subject] = fields(v, "the claim", ["statement", "quote", "subject"])?;
    let statement = string(statement, "statement", bounds::STATEMENT_MAX_CHARS)?;
    let quote = string(quote, "quote", bounds::QUOTE_MAX_CHARS)?;
    let subject = string(subject, "subject", bounds::NAME_MAX_CHARS)?;
    let (n_statement, n_quote, n_subject) = (
        collapse_cow(statement),
        collapse_cow(quote),
        collapse_cow(subject),
    );
    row.check(Check::Degenerate, Reason::Degenerate, || {
        degenerate(
            &n_statement,
            bounds::STATEMENT_MIN_CHARS,
            bounds::STATEMENT_MIN_WORDS,
        )
        .map(|d| format!("statement: {d}"))
        .or_else(|| {
            degenerate(&n_quote, bounds::QUOTE_MIN_CHARS, bounds::QUOTE_MIN_WORDS)
                .map(|d| format!("quote: {d}"))
        })
        .or_else(|| {
            degenerate(&n_subject, bounds::NAME_MIN_CHARS, 1).map(|d| format!("subject: {d}"))
        })
    })?;
    // Structural (guarantee 5): always enabled, always rejecting.
    let span = source
        .index
        .as_ref()
        .and_then(|ix| ix.find_normalised(&n_quote));
    let Some((start, end)) = span else {
        return fail(
            Reason::QuoteNotFound,
            format!(
                "quote {} is not in the source (after NFC and whitespace collapsing)",
                excerpt(quote, 60)
            ),
        );
    };
    let found_quote = &source.text[start..end];
    row.check(Check::Supported, Reason::Unsupported, || {
        let claim = ClaimText {
            statement,
            quote: found_quote,
            subject,
            quote_start: start,
        };
        source.support.unsupported(claim).or_else(|| {
            source.opinion.and_then(|o| {
                o.unsupported(statement, found_quote)
                    .map(|d| format!("second opinion: {d}"))
            })
        })
    })?;
    let mut subject_at = None;
    if row.enabled(Check::SubjectKnown) {
        subject_at = entities_by_name.get(&lower(&n_subject)).copied();
        // A subject the response did not list as an entity is still known when the
        // claim's own quote names it: the claim is kept, linked to no entity.
        row.check(Check::SubjectKnown, Reason::UnknownSubject, || {
            (subject_at.is_none() && !source.support.named_in(subject, found_quote)).then(|| {
                format!(
                    "subject {} is neither an accepted entity of this response nor named in the quote",
                    excerpt(subject, 40)
                )
            })
        })?;
    }
    let key = ClaimKey {
        span: (start, end),
        statement: lower(&n_statement),
    };
    row.check(Check::NoDuplicate, Reason::Duplicate, || {
        seen.contains(&key)
            .then(|| "repeats an earlier claim (same statement and quote)".to_owned())
    })?;
    let setting = row.config.setting(Check::FigureInQuote);
    if setting.enabled
        && let Some(detail) = figures_not_in(statement, found_quote)
    {
        match setting.severity {
            Severity::Warn => row.warnings.push(Finding {
                warning: Warning::FigureNotInQuote,
                reason: None,
                detail: bounded(detail),
            }),
            // The quote was found; it is the statement that disagrees with it.
            Severity::Reject => return fail(Reason::Inconsistent, detail),
        }
    }
    Ok(ClaimFound {
        statement,
        subject,
        span: (start, end),
        subject_at,
        key,
    })
}

pub(crate) fn judge_classify(
    config: &GateConfig,
    input: &ClassifyInput,
    raw: &[u8],
) -> Judgement<ClassifyRows> {
    let mut doc = None;
    let parsed = top(raw, &mut doc, ["relations"])
        .and_then(|[r]| array(r, "relations", bounds::MAX_RELATIONS));
    let relations = match parsed {
        Ok(x) => x,
        Err(f) => return whole(Task::Classify, f),
    };

    let mut rows = Vec::with_capacity(relations.len());
    let mut accepted = ClassifyRows::default();
    let mut seen: HashSet<(Handle, Handle)> = HashSet::new();
    for (index, v) in relations.iter().enumerate() {
        let mut row = Row::new(config);
        let result = (|| {
            let [a, b, relation] = fields(v, "the relation", ["a", "b", "relation"])?;
            let a = string(a, "a", HANDLE_MAX_CHARS)?;
            let b = string(b, "b", HANDLE_MAX_CHARS)?;
            let relation = string(relation, "relation", usize::MAX)?;
            let relation: RelationKind = closed(relation, "relation")?;
            // Structural (guarantee 6): a handle resolves only if it was sent.
            let resolve = |s: &str, name: &str| match Handle::parse(s) {
                Ok(h) if input.handles.contains(&h) => Ok(h),
                Ok(_) => fail(
                    Reason::UnknownHandle,
                    format!("{name:?} {} was not sent to the model", excerpt(s, 12)),
                ),
                Err(_) => fail(
                    Reason::UnknownHandle,
                    format!("{name:?} {} is not a claim handle", excerpt(s, 12)),
                ),
            };
            let a = resolve(a, "a")?;
            let b = resolve(b, "b")?;
            row.check(Check::PairRequested, Reason::UnrequestedPair, || {
                (!input.pairs.contains(&(a, b))).then(|| {
                    if input.pairs.contains(&(b, a)) {
                        format!("({a}, {b}) was not asked for; ({b}, {a}) was (order matters)")
                    } else {
                        format!("({a}, {b}) was not asked for")
                    }
                })
            })?;
            row.check(Check::NoDuplicate, Reason::Duplicate, || {
                seen.contains(&(a, b))
                    .then(|| format!("a second relation for ({a}, {b})"))
            })?;
            Ok((a, b, relation))
        })();
        let result = result.map(|(a, b, relation)| {
            seen.insert((a, b));
            accepted.relations.push(AcceptedRelation {
                index,
                a,
                b,
                relation,
                warnings: row.warnings.clone(),
            });
            row.warnings
        });
        rows.push(outcome(RowKind::Relation, index, result, None));
    }
    Judgement {
        task: Task::Classify,
        response_rejection: None,
        rows,
        accepted,
    }
}

/// `maxLength` of `a` and `b` in `relata.classify` v1.
const HANDLE_MAX_CHARS: usize = 12;
