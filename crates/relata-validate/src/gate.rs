//! Layers 2–4: the strict typed decode of the contract and the row-level checks.

use std::collections::{HashMap, HashSet};

use relata_core::contract::bounds;
use relata_core::{
    Check, EntityType, Handle, Reason, RelationKind, RowKind, Severity, Task, Warning,
};

use crate::ClassifyInput;
use crate::clause::Opening;
use crate::config::GateConfig;
use crate::decode::{self, Json};
use crate::normalize::{SourceIndex, collapse, collapse_cow, lower};
use crate::outcome::{
    AcceptedClaim, AcceptedEntity, AcceptedRelation, ClassifyRows, ExtractRows, Finding, Judgement,
    Rejection, RowDecision, RowOutcome,
};
use crate::support::{ClaimText, Support, SupportOpinion};
use crate::text::{bounded, degenerate, excerpt, figures_not_in};
use relata_core::SourceHandle;

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

pub(crate) fn closed<T: std::str::FromStr>(s: &str, name: &str) -> Result<T, Fail> {
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

pub(crate) fn top<'j, 'a, const N: usize>(
    raw: &'a [u8],
    doc: &'j mut Option<Json<'a>>,
    names: [&str; N],
) -> Result<[&'j Json<'a>; N], Fail> {
    let v = decode::parse(raw).map_err(|e| (e.reason, e.detail))?;
    let v = doc.insert(v);
    fields(v, "the response", names)
}

/// Which `relata.extract` contract a response answers: v1 copies each claim's quote from
/// the chunk; v2 names the chunk's sentence by its handle (`S1`, `S2`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtractShape {
    /// `relata.extract` v1: `claims` is an array of `{statement, quote, subject}`.
    Quotes,
    /// `relata.extract` v2: `claims` is an object keyed by sentence handle, each value
    /// `{subject, statement}` or `null`.
    Sentences,
    /// `relata.extract` v3: as v2, and a statement may be `null` for the sentence as the
    /// prompt showed it ([`relata_core::referents::shown`], read with the document's title).
    Shown,
}

impl ExtractShape {
    /// The shape of a contract's responses; `None` for a contract that is not
    /// `relata.extract`.
    pub fn of(contract: &relata_core::Contract) -> Option<ExtractShape> {
        match (contract.schema_id, contract.version) {
            ("relata.extract", 1) => Some(ExtractShape::Quotes),
            ("relata.extract", 2) => Some(ExtractShape::Sentences),
            ("relata.extract", 3) => Some(ExtractShape::Shown),
            _ => None,
        }
    }
}

pub(crate) fn judge_extract(
    config: &GateConfig,
    shape: ExtractShape,
    source: &str,
    title: Option<&str>,
    raw: &[u8],
    opinion: Option<&dyn SupportOpinion>,
) -> Judgement<ExtractRows> {
    // What a v3 `null` statement stands for: each sentence as the prompt showed it. Made
    // before the response is parsed, so a statement can borrow from it as from the JSON;
    // the sentences and names it is read from are the chunk's, handed on, not read twice.
    let (shown, read) = match shape {
        ExtractShape::Shown => {
            let sentences = relata_core::sentences::handled(source);
            let names = relata_core::names::candidates(source, title);
            let (shown, written) =
                relata_core::referents::shown_with_names(source, title, &sentences, &names)
                    .into_iter()
                    .unzip();
            (shown, Some((sentences, names, written)))
        }
        _ => (Vec::new(), None),
    };
    let mut doc = None;
    let parsed = top(raw, &mut doc, ["entities", "claims"]).and_then(|[e, c]| {
        let entities = array(e, "entities", bounds::MAX_ENTITIES)?;
        let claims = match shape {
            ExtractShape::Quotes => ClaimRows::Quoted(array(c, "claims", bounds::MAX_CLAIMS)?),
            ExtractShape::Sentences | ExtractShape::Shown => {
                ClaimRows::Keyed(keyed(c, "claims", bounds::MAX_CLAIMS)?, &shown)
            }
        };
        Ok((entities, claims))
    });
    let (entities, claims) = match parsed {
        Ok(x) => x,
        Err(f) => return whole(Task::Extract, f),
    };

    let chunk = Chunk::new(source, title, read, config, opinion);
    let mut rows = Vec::with_capacity(entities.len() + claims.len());
    let mut accepted = ExtractRows::default();
    let mut seen = EntitiesSeen::default();
    for (index, v) in entities.iter().enumerate() {
        let mut row = Row::new(config);
        let result = check_entity(&mut row, v, &chunk, &seen).map(|found| {
            accepted.entities.push(AcceptedEntity {
                index,
                name: found.name,
                entity_type: found.entity_type,
                warnings: row.warnings.clone(),
            });
            seen.record(found.key, accepted.entities.len() - 1);
            row.warnings
        });
        rows.push(outcome(RowKind::Entity, index, result, None));
    }

    // Entities a claim's subject implies (a name of the chunk the response did not list):
    // stored after the response's own rows, numbered on from them.
    let mut implied_index = entities.len();
    let mut seen_claims = ClaimsSeen::default();
    for (index, candidate) in claims.iter(&chunk) {
        let mut row = Row::new(config);
        let result =
            candidate.and_then(|c| check_claim(&mut row, c, &chunk, &seen.by_name, &seen_claims));
        let span = result.as_ref().ok().map(|found| found.span);
        let result = result.map(|found| {
            let (start, end) = found.span;
            let at = match found.subject_at {
                SubjectAt::Entity(at) => Some(at),
                SubjectAt::Unlinked => None,
                SubjectAt::Implied => {
                    accepted.entities.push(AcceptedEntity {
                        index: implied_index,
                        name: found.subject.clone(),
                        entity_type: EntityType::Other,
                        warnings: Vec::new(),
                    });
                    implied_index += 1;
                    let at = accepted.entities.len() - 1;
                    seen.record((lower(&collapse(&found.subject)), EntityType::Other), at);
                    Some(at)
                }
            };
            let (subject, subject_entity_index) = match at {
                Some(at) => {
                    let e = &accepted.entities[at];
                    (e.name.clone(), Some(e.index))
                }
                None => (found.subject.clone(), None),
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

/// The fields of an object keyed by sentence handle (`relata.extract` v2's `claims`), in
/// response order: a repeated key is refused, and more than `max` entries.
fn keyed<'j, 'a>(
    v: &'j Json<'a>,
    name: &str,
    max: usize,
) -> Result<&'j [(std::borrow::Cow<'a, str>, Json<'a>)], Fail> {
    let Json::Object(obj) = v else {
        return fail(
            Reason::Schema,
            format!("{name:?} is {}, not an object", v.type_name()),
        );
    };
    if let Some(k) = &obj.duplicate {
        return fail(
            Reason::Schema,
            format!("{name:?} repeats the key {}", excerpt(k, 40)),
        );
    }
    if obj.entries.len() > max {
        return fail(
            Reason::Schema,
            format!(
                "{name:?} has {} entries, over the bound of {max}",
                obj.entries.len()
            ),
        );
    }
    Ok(&obj.entries)
}

/// The claim rows of a response, as each contract writes them.
enum ClaimRows<'j, 'a> {
    Quoted(&'j [Json<'a>]),
    /// Keyed by sentence handle, with each sentence as shown (v3; empty for v2, where a
    /// statement must be written).
    Keyed(&'j [(std::borrow::Cow<'a, str>, Json<'a>)], &'j [String]),
}

impl<'j, 'a> ClaimRows<'j, 'a> {
    fn len(&self) -> usize {
        match self {
            ClaimRows::Quoted(rows) => rows.len(),
            ClaimRows::Keyed(rows, _) => rows.len(),
        }
    }

    /// Each row with its position in the response, decoded to what every claim is judged
    /// from, or why it cannot be (its shape, an unknown handle). A `null` sentence is no
    /// row (and keeps its position).
    fn iter<'c>(
        &self,
        chunk: &'c Chunk<'_>,
    ) -> Box<dyn Iterator<Item = (usize, Result<ClaimInput<'j>, Fail>)> + 'c>
    where
        'j: 'c,
    {
        match *self {
            ClaimRows::Quoted(rows) => {
                Box::new(rows.iter().map(|v| quoted_claim(v, chunk)).enumerate())
            }
            ClaimRows::Keyed(rows, shown) => Box::new(
                rows.iter()
                    .enumerate()
                    .filter(|(_, (_, v))| !matches!(v, Json::Null))
                    .map(move |(i, (k, v))| (i, keyed_claim(k, v, chunk, shown))),
            ),
        }
    }
}

/// A claim as every contract gives it: the statement and subject as the model wrote them
/// and where its source is.
struct ClaimInput<'j> {
    statement: &'j str,
    subject: &'j str,
    source: SourceRef<'j>,
}

/// A claim's source as the response names it.
enum SourceRef<'j> {
    /// A quote copied from the chunk (v1), to be found in it.
    Quote(&'j str),
    /// A sentence of the chunk named by its handle (v2): its byte span.
    Sentence((usize, usize)),
}

/// A v1 claim: `{statement, quote, subject}`.
fn quoted_claim<'j>(v: &'j Json<'_>, _chunk: &Chunk<'_>) -> Result<ClaimInput<'j>, Fail> {
    let [statement, quote, subject] = fields(v, "the claim", ["statement", "quote", "subject"])?;
    let statement = string(statement, "statement", bounds::STATEMENT_MAX_CHARS)?;
    let quote = string(quote, "quote", bounds::QUOTE_MAX_CHARS)?;
    let subject = string(subject, "subject", bounds::NAME_MAX_CHARS)?;
    Ok(ClaimInput {
        statement,
        subject,
        source: SourceRef::Quote(quote),
    })
}

/// A v2 or v3 claim: its key a sentence handle that was sent, its value `{subject,
/// statement}`; under v3 (`shown` not empty) a `null` statement is the sentence as shown.
fn keyed_claim<'j>(
    key: &str,
    v: &'j Json<'_>,
    chunk: &Chunk<'_>,
    shown: &'j [String],
) -> Result<ClaimInput<'j>, Fail> {
    // Structural (guarantee 6): a handle resolves only to a sentence that was shown.
    let (span, as_shown) = match SourceHandle::parse(key) {
        Ok(h) => match chunk.sentences.get(h.index()) {
            Some(&span) => (span, shown.get(h.index())),
            None => {
                return fail(
                    Reason::UnknownHandle,
                    format!(
                        "{} names no sentence of the chunk (it has {})",
                        excerpt(key, 12),
                        chunk.sentences.len()
                    ),
                );
            }
        },
        Err(_) => {
            return fail(
                Reason::UnknownHandle,
                format!("{} is not a sentence handle", excerpt(key, 12)),
            );
        }
    };
    let [subject, statement] = fields(v, "the claim", ["subject", "statement"])?;
    let subject = string(subject, "subject", bounds::NAME_MAX_CHARS)?;
    // The sentence as shown is judged like any statement: it must read alone, be about
    // its subject and be supported; only its copying is spared.
    let statement = match (statement, as_shown) {
        // Held to the bound a written statement is held to: what is stored obeys the
        // contract however it was given.
        (Json::Null, Some(as_shown)) if as_shown.chars().count() > bounds::STATEMENT_MAX_CHARS => {
            return fail(
                Reason::Schema,
                format!(
                    "\"statement\" is null for {key}, whose sentence is {} characters, over the statement bound of {}",
                    as_shown.chars().count(),
                    bounds::STATEMENT_MAX_CHARS
                ),
            );
        }
        (Json::Null, Some(as_shown)) => as_shown.as_str(),
        _ => string(statement, "statement", bounds::STATEMENT_MAX_CHARS)?,
    };
    Ok(ClaimInput {
        statement,
        subject,
        source: SourceRef::Sentence(span),
    })
}

/// A chunk's sentences (byte spans, as handles number them), its names, and the name
/// written into each sentence as shown with the sentence that gave it, read once.
type ReadChunk = (
    Vec<(usize, usize)>,
    Vec<String>,
    Vec<Option<(String, usize)>>,
);

/// The chunk every row of one response is judged against.
struct Chunk<'s> {
    text: &'s str,
    index: SourceIndex<'s>,
    /// The chunk's sentences as handles number them ([`relata_core::sentences::handled`]).
    sentences: Vec<(usize, usize)>,
    support: Support,
    opinion: Option<&'s dyn SupportOpinion>,
    /// The document's title, when the caller knows it: its names count the title as the
    /// prompt's do.
    title: Option<&'s str>,
    names: std::cell::OnceCell<Vec<String>>,
    /// Per sentence, the name the prompt wrote into it and the sentence that gave it
    /// ([`relata_core::referents::shown_with_names`]); empty for a contract that shows
    /// sentences as written.
    written: Vec<Option<(String, usize)>>,
}

impl<'s> Chunk<'s> {
    /// `read`: the chunk's sentences and names when the caller has read them already.
    fn new(
        text: &'s str,
        title: Option<&'s str>,
        read: Option<ReadChunk>,
        config: &'s GateConfig,
        opinion: Option<&'s dyn SupportOpinion>,
    ) -> Chunk<'s> {
        let (sentences, names, written) = match read {
            Some((sentences, names, written)) => {
                (sentences, std::cell::OnceCell::from(names), written)
            }
            None => (
                relata_core::sentences::handled(text),
                std::cell::OnceCell::new(),
                Vec::new(),
            ),
        };
        Chunk {
            text,
            title,
            index: SourceIndex::new(text),
            sentences,
            support: Support::new(config.support()),
            opinion,
            names,
            written,
        }
    }

    /// Where `name` stands in the chunk as a whole word (after the quote normalisation),
    /// as written or with its first letter's case changed ("Electrons" / "electrons"):
    /// the chunk's own spelling at those offsets is the name that is stored.
    fn find_name(&self, name: &str) -> Option<(usize, usize)> {
        let n = collapse(name);
        let mut chars = n.chars();
        let head = chars.next()?;
        let flipped: String = if head.is_uppercase() {
            head.to_lowercase().chain(chars).collect()
        } else {
            head.to_uppercase().chain(chars).collect()
        };
        [n.as_str(), flipped.as_str()]
            .into_iter()
            .find_map(|n| self.index.find_word_normalised(n))
    }
}

/// What a source that refers back may be read with: the opening noun phrases of the
/// sentences before it that it refers to, nearest first, and where each sentence starts.
struct Context {
    phrases: Vec<String>,
    starts: Vec<usize>,
}

/// How many sentences back a referring opening is followed ("X is … It was … It is …").
const CONTEXT_SENTENCES: usize = 2;

impl Chunk<'_> {
    /// What the source at `start..end` may be read with. A source that starts inside a
    /// sentence (a quote of its second half) is read with that sentence's subject; a
    /// sentence of the source that opens with a reference back (a pronoun, "this method",
    /// "the film") is read with the subjects of the sentences just before it: the one
    /// before, and the one before that while each also refers back, up to
    /// [`CONTEXT_SENTENCES`], and last with the chunk's first sentence's subject.
    fn context_of(&self, start: usize, end: usize) -> Option<Context> {
        let mut context = Context {
            phrases: Vec::new(),
            starts: Vec::new(),
        };
        let add = |context: &mut Context, s: usize, e: usize| {
            let sentence = &self.text[s..e];
            let r = crate::clause::read(sentence);
            if r.np.1 > r.np.0 && !context.starts.contains(&s) {
                context.phrases.push(sentence[r.np.0..r.np.1].to_owned());
                context.starts.push(s);
            }
            r.refers_back()
        };
        let mut referred = false;
        // Names the prompt wrote into the source's sentences ("It was a landmark work …"
        // shown as "Al-Jabr was …"), read last, each reaching back to the sentence that
        // gave it: the sentence as shown is judged as the model was shown it.
        let mut written = Vec::new();
        for (j, &(s, e)) in self.sentences.iter().enumerate() {
            if e <= start || s >= end {
                continue;
            }
            // A name in lowercase ("nocturnes" for "They") is a common noun: which ones is
            // still the document's to say.
            if s >= start
                && let Some(Some((name, from))) = self.written.get(j)
                && name.starts_with(|c: char| !c.is_lowercase())
                && let Some(&(from_start, _)) = self.sentences.get(*from)
            {
                written.push((name.clone(), from_start));
            }
            if s < start {
                // The quote begins after this sentence's opening: its subject is the
                // nearest referent (and may itself refer back).
                if !add(&mut context, s, e) {
                    continue;
                }
            } else if !crate::clause::leans_back(&self.text[s..e]) {
                continue;
            }
            referred = true;
            for &(ps, pe) in self.sentences[..j].iter().rev().take(CONTEXT_SENTENCES) {
                if !add(&mut context, ps, pe) {
                    break;
                }
            }
        }
        // The chunk's opening subject (its topic: "William Shakespeare was …") is what a
        // "he" or "it" three sentences on most often means; it is read last.
        if referred
            && let Some(&(s, e)) = self.sentences.first()
            && s < start
        {
            add(&mut context, s, e);
        }
        for (name, from_start) in written {
            if context.phrases.contains(&name) {
                continue;
            }
            context.phrases.push(name);
            context.starts.push(from_start);
        }
        (!context.phrases.is_empty()).then_some(context)
    }

    /// The chunk's names ([`relata_core::names::candidates`]), in order of appearance:
    /// computed once per response, on first need.
    fn names(&self) -> &[String] {
        self.names
            .get_or_init(|| relata_core::names::candidates(self.text, self.title))
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
struct EntityFound {
    /// The chunk's own spelling of the name (the model's when `name_found` is off).
    name: String,
    entity_type: EntityType,
    /// Normalised, lowercased name and type: what makes two entities the same.
    key: (String, EntityType),
}

fn check_entity(
    row: &mut Row<'_>,
    v: &Json<'_>,
    chunk: &Chunk<'_>,
    seen: &EntitiesSeen,
) -> Result<EntityFound, Fail> {
    let [name, ty] = fields(v, "the entity", ["name", "type"])?;
    let name = string(name, "name", bounds::NAME_MAX_CHARS)?;
    let ty = string(ty, "type", usize::MAX)?;
    let ty: EntityType = closed(ty, "type")?;
    let n_name = collapse(name);
    row.check(Check::Degenerate, Reason::Degenerate, || {
        degenerate(&n_name, bounds::NAME_MIN_CHARS, 1).map(|d| format!("name: {d}"))
    })?;
    let mut stored = name.to_owned();
    if row.enabled(Check::NameFound) {
        let found = chunk.find_name(name);
        if let Some((s, e)) = found {
            stored = chunk.text[s..e].to_owned();
        }
        row.check(Check::NameFound, Reason::NameNotFound, || {
            found.is_none().then(|| {
                format!(
                    "name {} is not in the chunk (as a whole word, after NFC and whitespace collapsing)",
                    excerpt(name, 40)
                )
            })
        })?;
    }
    let key = (lower(&collapse(&stored)), ty);
    row.check(Check::NoDuplicate, Reason::Duplicate, || {
        seen.keys
            .contains(&key)
            .then(|| format!("repeats an earlier entity {} ({ty})", excerpt(name, 40)))
    })?;
    Ok(EntityFound {
        name: stored,
        entity_type: ty,
        key,
    })
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

/// Which entity a claim's subject is.
enum SubjectAt {
    /// The accepted entity at this index (among the accepted entities).
    Entity(usize),
    /// A name of the chunk the response did not list: it becomes an entity of its own.
    Implied,
    /// Neither (the `subject_known` check demoted or off): the claim links to no entity.
    Unlinked,
}

/// A claim row that passed every check.
struct ClaimFound<'j> {
    statement: &'j str,
    /// The subject as stored: the accepted entity's name, or the chunk's own spelling.
    subject: String,
    /// Byte offsets of the stored quote in the chunk: the source, extended back over the
    /// sentences its referring words were read with.
    span: (usize, usize),
    subject_at: SubjectAt,
    key: ClaimKey,
}

fn check_claim<'j>(
    row: &mut Row<'_>,
    claim: ClaimInput<'j>,
    chunk: &Chunk<'_>,
    entities_by_name: &HashMap<String, usize>,
    seen: &ClaimsSeen,
) -> Result<ClaimFound<'j>, Fail> {
    let ClaimInput {
        statement,
        subject,
        source,
    } = claim;
    let (n_statement, n_subject) = (collapse_cow(statement), collapse_cow(subject));
    let n_quote = match source {
        SourceRef::Quote(q) => Some(collapse_cow(q)),
        SourceRef::Sentence(_) => None,
    };
    row.check(Check::Degenerate, Reason::Degenerate, || {
        degenerate_claim(&n_statement, n_quote.as_deref(), &n_subject)
    })?;
    let (start, end) = locate_source(source, n_quote, chunk)?;
    let reading = read_statement(statement, chunk);
    row.check(Check::Standalone, Reason::NotStandalone, || {
        not_standalone(&reading, statement)
    })?;
    // The sentences before the source that its referring opening may be read with.
    let context = chunk.context_of(start, end);
    let mut quote_start = start;
    row.check(Check::Supported, Reason::Unsupported, || {
        let at = (start, end);
        unsupported_claim(
            statement,
            &reading,
            chunk,
            at,
            context.as_ref(),
            &mut quote_start,
        )
    })?;
    let (subject_at, stored_subject) = subject_of(subject, &n_subject, chunk, entities_by_name);
    row.check(Check::SubjectKnown, Reason::UnknownSubject, || {
        matches!(subject_at, SubjectAt::Unlinked).then(|| {
            format!(
                "subject {} is neither an accepted entity of this response nor a name in the chunk",
                excerpt(subject, 40)
            )
        })
    })?;
    row.check(Check::SubjectTopic, Reason::WrongSubject, || {
        let referents = context.as_ref().map(|c| c.phrases.as_slice());
        wrong_subject(&reading, statement, subject, chunk, referents)
    })?;
    let key = ClaimKey {
        span: (quote_start, end),
        statement: lower(&n_statement),
    };
    row.check(Check::NoDuplicate, Reason::Duplicate, || {
        seen.contains(&key)
            .then(|| "repeats an earlier claim (same statement and quote)".to_owned())
    })?;
    figure_in_quote(row, statement, &chunk.text[quote_start..end])?;
    Ok(ClaimFound {
        statement,
        subject: stored_subject,
        span: (quote_start, end),
        subject_at,
        key,
    })
}

/// Which of a claim's statement, quote (when it gives one) and subject is degenerate.
fn degenerate_claim(statement: &str, quote: Option<&str>, subject: &str) -> Option<String> {
    degenerate(
        statement,
        bounds::STATEMENT_MIN_CHARS,
        bounds::STATEMENT_MIN_WORDS,
    )
    .map(|d| format!("statement: {d}"))
    .or_else(|| {
        let q = quote?;
        degenerate(q, bounds::QUOTE_MIN_CHARS, bounds::QUOTE_MIN_WORDS)
            .map(|d| format!("quote: {d}"))
    })
    .or_else(|| degenerate(subject, bounds::NAME_MIN_CHARS, 1).map(|d| format!("subject: {d}")))
}

/// The byte span in the chunk of a claim's source: the sentence its handle names, or
/// where its quote (`n_quote`, normalised) is found.
fn locate_source(
    source: SourceRef<'_>,
    n_quote: Option<std::borrow::Cow<'_, str>>,
    chunk: &Chunk<'_>,
) -> Result<(usize, usize), Fail> {
    match source {
        SourceRef::Sentence(span) => Ok(span),
        // Structural (guarantee 5): always enabled, always rejecting.
        SourceRef::Quote(quote) => {
            match chunk.index.find_normalised(&n_quote.unwrap_or_default()) {
                Some(span) => Ok(span),
                None => fail(
                    Reason::QuoteNotFound,
                    format!(
                        "quote {} is not in the source (after NFC and whitespace collapsing)",
                        excerpt(quote, 60)
                    ),
                ),
            }
        }
    }
}

/// Read a claim's statement as the checks see it, in the light of the chunk's names.
fn read_statement(statement: &str, chunk: &Chunk<'_>) -> crate::clause::Reading {
    let mut reading = crate::clause::read(statement);
    // A definite phrase naming one of the chunk's names is a name, not a reference back:
    // "The action film is a film genre …", "The essential characteristic of the accordion
    // is …" in the articles on them.
    if let Opening::Definite(phrase) = &reading.opening
        && chunk
            .names()
            .iter()
            .any(|n| crate::clause::names_in(phrase, n))
    {
        reading.opening = Opening::Subject;
    }
    reading
}

/// Why the source at `start..end` in the chunk, read with its `context`, does not support
/// the statement: by the support check, rule 11 and the second opinion. When the statement
/// drew on the context, `quote_start` moves back to the start of the furthest sentence it
/// drew on.
fn unsupported_claim(
    statement: &str,
    reading: &crate::clause::Reading,
    chunk: &Chunk<'_>,
    (start, end): (usize, usize),
    context: Option<&Context>,
    quote_start: &mut usize,
) -> Option<String> {
    let found_quote = &chunk.text[start..end];
    // The statement restates the source's main clause, whose subject refers back: the
    // statement must say what that subject is ("It is bordered by Rajasthan …" is
    // not about Rajasthan).
    let source = crate::clause::read(found_quote);
    let source_refers = matches!(
        source.opening,
        Opening::Pronoun(_) | Opening::Pointing(_) | Opening::Definite(_)
    );
    let same_clause = source.verb.is_some() && source.verb == reading.verb;
    let claim = ClaimText {
        statement,
        quote: found_quote,
        context: context.map(|c| c.phrases.as_slice()).unwrap_or(&[]),
        referent_required: source_refers && same_clause && !reading.refers_back(),
    };
    // The source's subject refers back, and the statement (which names its own) took
    // nothing from what it refers to: its subject may be a name the source only
    // mentions.
    let borrowed = || source_refers && !reading.refers_back() && context.is_some();
    match chunk.support.unsupported(claim) {
        Err(detail) => Some(detail),
        Ok(None) if borrowed() => {
            // 11. A name the source mentions is not what it says this of: "It is
            // regarded, with Anna Karenina, as …" is not about Anna Karenina.
            let np = &statement[reading.np.0..reading.np.1];
            crate::clause::mentioned_only(np, found_quote).map(|name| {
                format!(
                    "the quote's subject refers back, and {} is only mentioned in it, not what it says this of",
                    excerpt(&name, 40)
                )
            })
        }
        Ok(used) => {
            if let Some(k) = used
                && let Some(c) = context
            {
                *quote_start = c.starts[..=k].iter().copied().fold(start, usize::min);
            }
            chunk.opinion.and_then(|o| {
                o.unsupported(statement, &chunk.text[*quote_start..end])
                    .map(|d| format!("second opinion: {d}"))
            })
        }
    }
}

/// Which entity a claim's subject is, and the subject as stored.
fn subject_of(
    subject: &str,
    n_subject: &str,
    chunk: &Chunk<'_>,
    entities_by_name: &HashMap<String, usize>,
) -> (SubjectAt, String) {
    let listed = entities_by_name.get(&lower(n_subject)).copied();
    let in_chunk = listed.is_none().then(|| chunk.find_name(subject)).flatten();
    match (listed, in_chunk) {
        (Some(at), _) => (SubjectAt::Entity(at), subject.to_owned()),
        (None, Some((s, e))) => (SubjectAt::Implied, chunk.text[s..e].to_owned()),
        (None, None) => (SubjectAt::Unlinked, subject.to_owned()),
    }
}

/// The `figure_in_quote` check: a figure of the statement the stored quote lacks.
fn figure_in_quote(row: &mut Row<'_>, statement: &str, quote: &str) -> Result<(), Fail> {
    let setting = row.config.setting(Check::FigureInQuote);
    if setting.enabled
        && let Some(detail) = figures_not_in(statement, quote)
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
    Ok(())
}

/// Why `subject` is not what `statement` is about: not named in its opening noun phrase,
/// or named there only as a modifier or a complement of something else ("Korean" in
/// "Korean popular culture", "Seurat" in "Seurat's most famous work", "Westminster" in
/// "The Elizabeth Tower of the Palace of Westminster"); for a statement without a main
/// clause, a subject it mentions (the fragment describes something else). A statement
/// whose subject refers back ("It …", "This method …") is about what its source's opening
/// refers to: the subject must be named by one of the `referents` the chunk gives before
/// the source (it cannot be read alone either, which `standalone` judges).
fn wrong_subject(
    reading: &crate::clause::Reading,
    statement: &str,
    subject: &str,
    chunk: &Chunk<'_>,
    referents: Option<&[String]>,
) -> Option<String> {
    // "Often" for "Often used in pairs, cymbals …": a word that opens the sentence, not
    // a name of the chunk (unless the chunk writes it as one where no sentence opens).
    if relata_core::names::common_word(subject)
        && !chunk.names().iter().any(|n| n == subject.trim())
    {
        return Some(format!(
            "subject {} is a common word, not a name the chunk gives",
            excerpt(subject, 40)
        ));
    }
    match &reading.opening {
        Opening::Pronoun(p) | Opening::Pointing(p) | Opening::Definite(p) => {
            let referents = referents.filter(|r| !r.is_empty())?;
            let names = |phrase: &str| chunk.support.names_subject(subject, phrase, chunk.names());
            // "These eddy currents …" is about eddy currents, whatever it points back to;
            // "Its plot …" is about a plot, not about what "its" stands for.
            let possessive = p.split_whitespace().next().is_some_and(|w| {
                matches!(
                    w.to_lowercase().as_str(),
                    "its" | "his" | "her" | "their" | "our"
                )
            });
            (!names(p) && (possessive || !referents.iter().any(|r| names(r)))).then(|| {
                format!(
                    "subject {} is not what {} stands for (the sentences before speak of {})",
                    excerpt(subject, 40),
                    excerpt(p, 30),
                    excerpt(&referents.join("; "), 60)
                )
            })
        }
        Opening::NoMainClause(_) => chunk.support.mentions(subject, statement).then(|| {
            format!(
                "the statement has no subject of its own, and {} is something it mentions",
                excerpt(subject, 40)
            )
        }),
        Opening::Subject => {
            let np = &statement[reading.np.0..reading.np.1];
            // A name the chunk itself gives as another name of what the statement is
            // about ("the Oscars" for "The Academy Awards, more commonly known as the
            // Oscars, are …") is that thing's name.
            let alias = || {
                chunk.names().iter().any(|n| {
                    chunk.support.names_subject(n, np, chunk.names())
                        && crate::resolve::aliases_in(chunk.text, n, subject)
                })
            };
            if !chunk.support.names_subject(subject, np, chunk.names()) && !alias() {
                return Some(format!(
                    "subject {} is not named in what the statement is about ({})",
                    excerpt(subject, 40),
                    excerpt(np, 60)
                ));
            }
            crate::clause::dependent_in(subject, np).map(|how| {
                format!(
                    "subject {} is {how} in what the statement is about ({})",
                    excerpt(subject, 40),
                    excerpt(np, 60)
                )
            })
        }
    }
}

/// Why a statement cannot be read alone, from how it opens and how it ends.
fn not_standalone(reading: &crate::clause::Reading, statement: &str) -> Option<String> {
    if let Some(last) = crate::support::dangling_end(statement) {
        return Some(format!(
            "it is cut mid-phrase (it ends on {})",
            excerpt(last, 24)
        ));
    }
    if let Some(end) = crate::clause::unfinished(statement) {
        return Some(format!("it is unfinished (it ends on {end})"));
    }
    if let Some(pair) = crate::clause::garbled(statement) {
        return Some(format!("it is garbled ({})", excerpt(&pair, 30)));
    }
    match &reading.opening {
        Opening::Subject => crate::clause::points_back_inside(statement).map(|p| {
            format!(
                "{} points back into the document: a reader without it cannot tell which",
                excerpt(&p, 40)
            )
        }),
        Opening::Pronoun(p) => Some(format!(
            "its subject is the pronoun {}: a reader without the document cannot tell what it is",
            excerpt(p, 30)
        )),
        Opening::Pointing(p) => Some(format!(
            "its subject {} points back into the document and names nothing",
            excerpt(p, 40)
        )),
        Opening::Definite(p) => Some(format!(
            "its subject {} names nothing: which one is in the document, not the statement",
            excerpt(p, 40)
        )),
        Opening::NoMainClause(why) => Some(format!("it is not a sentence: {why}")),
    }
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
