//! The answer gate: `relata.answer` v1 judged in the same four layers as the extract and
//! classify contracts.
//!
//! An answer is one row, so the gate does not split it: it judges the whole response and
//! returns *every* problem it found (not only the first), so that a degraded answer states
//! all of its reasons.
//!
//! 1. **Syntactic** and 2. **schema**: exactly as the extract gate (the same decoder and
//!    the same strict field, type and bound checks): `too_large`, `not_json`, `empty`,
//!    `trailing_content`, `schema`, `unknown_field`, `unstorable`. Any of them rejects the
//!    whole response and no other check runs.
//! 3. **Semantic**: `handle_known` (structural) — every citation and every inline marker
//!    (`[S1]`, `[S1, S2]`) must name a source that was sent, else `unknown_handle`;
//!    `degenerate` — the prose of a found answer must not be a placeholder, a field name
//!    (`answer`, `sufficient`, …) or text too short to carry meaning, unless that short
//!    text read with the question is supported by a cited sentence (a name or a figure
//!    that answers it); `markers_match` (warns by default) — an inline marker not in
//!    `citations`, or a citation with no marker, is `marker_mismatch`; `figure_in_sources`
//!    (warns by default) — a number, year or percentage of the prose found in none of the
//!    *cited* sources is `figure_not_in_sources`. At severity `reject` the last two reject
//!    as `inconsistent`; `citation_supported` — each sentence must be supported, by the
//!    claims' support check, by a window of one or two adjacent sentences of a passage it
//!    cites, else `unsupported` (at severity `warn`, the caveat `citation_unsupported`).
//! 4. **Consistency**: `cited` (structural) — `found: true` with no citation is
//!    `uncited_answer`, the most dangerous answer there is; `abstention` — `found: false`
//!    must cite nothing and its prose must be exactly
//!    [`ANSWER_ABSTENTION`](relata_core::contract::ANSWER_ABSTENTION) (after NFC and
//!    whitespace collapsing), else `bad_abstention`.
//!
//! The gate never repairs: a citation it cannot resolve is not mapped to the nearest
//! source, and a marker missing from `citations` is not added to it.

use std::collections::{BTreeMap, BTreeSet};

use relata_core::contract::{ANSWER_ABSTENTION, bounds};
use relata_core::{AnswerCheck, AnswerStatus, Contract, Reason, Severity, SourceHandle, Warning};

use crate::config::{CheckSetting, ConfigError};
use crate::decode::{self, Json};
use crate::gate::{Fail, array, fields, string};
use crate::normalize::{collapse, lower};
use crate::outcome::Finding;
use crate::text::{bounded, degenerate, excerpt, figures};

/// The answer gate's settings: every [`AnswerCheck`] with `enabled` and `severity`.
/// The default enables every check; `markers_match` and `figure_in_sources` warn, every
/// other check rejects.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerConfig {
    checks: BTreeMap<AnswerCheck, CheckSetting>,
}

impl Default for AnswerConfig {
    fn default() -> Self {
        let checks = AnswerCheck::ALL
            .iter()
            .map(|&c| {
                let severity = match c {
                    AnswerCheck::MarkersMatch | AnswerCheck::FigureInSources => Severity::Warn,
                    _ => Severity::Reject,
                };
                (
                    c,
                    CheckSetting {
                        enabled: true,
                        severity,
                    },
                )
            })
            .collect();
        AnswerConfig { checks }
    }
}

impl AnswerConfig {
    pub fn setting(&self, check: AnswerCheck) -> CheckSetting {
        self.checks[&check]
    }

    /// Change one check. Structural checks refuse anything but enabled + reject.
    pub fn set(&mut self, check: AnswerCheck, setting: CheckSetting) -> Result<(), ConfigError> {
        if check.is_structural() && (!setting.enabled || setting.severity != Severity::Reject) {
            return Err(ConfigError::StructuralAnswer(check));
        }
        self.checks.insert(check, setting);
        Ok(())
    }

    /// Every check with its setting, in a stable order.
    pub fn iter(&self) -> impl Iterator<Item = (AnswerCheck, CheckSetting)> + '_ {
        self.checks.iter().map(|(c, s)| (*c, *s))
    }
}

/// An answer that passed the gate. Only this crate can build one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedAnswer {
    prose: String,
    citations: Vec<SourceHandle>,
    found: bool,
}

impl AcceptedAnswer {
    pub fn prose(&self) -> &str {
        &self.prose
    }
    /// The cited sources, in the order the model listed them, each once.
    pub fn citations(&self) -> &[SourceHandle] {
        &self.citations
    }
    pub fn found(&self) -> bool {
        self.found
    }
}

/// One reason an answer was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerRejection {
    pub reason: Reason,
    /// Bounded, human-readable; never a metric label.
    pub detail: String,
}

/// The verdict on one answer response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerJudgement {
    accepted: Option<AcceptedAnswer>,
    /// Every rejection found (empty when accepted).
    pub rejections: Vec<AnswerRejection>,
    /// Findings of warning checks (and of rejecting checks demoted to `warn`).
    pub warnings: Vec<Finding>,
}

impl AnswerJudgement {
    /// `answered`, `abstained` or `degraded`.
    pub fn status(&self) -> AnswerStatus {
        match &self.accepted {
            Some(a) if a.found => AnswerStatus::Answered,
            Some(_) => AnswerStatus::Abstained,
            None => AnswerStatus::Degraded,
        }
    }

    pub fn accepted(&self) -> Option<&AcceptedAnswer> {
        self.accepted.as_ref()
    }

    fn rejected(fail: Fail) -> AnswerJudgement {
        AnswerJudgement {
            accepted: None,
            rejections: vec![AnswerRejection {
                reason: fail.0,
                detail: fail.1,
            }],
            warnings: Vec::new(),
        }
    }
}

/// Field names and words of the contract that a model writes when it copies the schema
/// instead of answering (on top of the gate's general placeholders).
const ANSWER_PLACEHOLDERS: &[&str] = &["answer", "citations", "found", "sufficient", "true"];

/// Prose that says a thing is itself ("The Dead Sea is the Dead Sea."): a sentence's
/// shape with nothing in it, which any source that names the thing "supports".
fn tautology(bare: &str) -> Option<String> {
    let said = bare.trim().trim_end_matches(['.', ' ']).to_lowercase();
    let article = |x: &str| -> String {
        let x = x.trim();
        ["the ", "a ", "an "]
            .iter()
            .find_map(|a| x.strip_prefix(a))
            .unwrap_or(x)
            .to_owned()
    };
    let (subject, predicate) = [" is ", " are ", " was ", " were "]
        .iter()
        .find_map(|copula| said.split_once(copula))?;
    let subject = article(subject);
    (!subject.is_empty() && subject == article(predicate))
        .then(|| format!("says only that {} is itself", excerpt(bare.trim(), 40)))
}

/// Prose that is a piece of its own question ("The United States" to "Who succeeded
/// George Washington as President of the United States?"): read with the question it is
/// supported by any source the question's names are in, and it answers nothing.
fn echo(question: &str, bare: &str) -> Option<String> {
    let asked: Vec<String> = words(question).collect();
    let mut said: Vec<String> = words(bare).collect();
    if said
        .first()
        .is_some_and(|w| matches!(w.as_str(), "the" | "a" | "an"))
    {
        said.remove(0);
    }
    let inside = !said.is_empty() && asked.windows(said.len()).any(|w| w == said.as_slice());
    inside.then(|| format!("repeats the question: {}", excerpt(bare.trim(), 40)))
}

/// Prose under the bounds of a statement: a name or a figure, not a sentence.
fn short(bare: &str) -> bool {
    degenerate(bare, bounds::ANSWER_MIN_CHARS, bounds::ANSWER_MIN_WORDS).is_some()
}

/// The sentences of an answer's prose: split after `.`, `!` or `?` (a marker before the
/// stop stays with its sentence) where a space follows.
fn answer_sentences(prose: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = prose.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1).is_some_and(u8::is_ascii_whitespace)
        {
            out.push(&prose[start..=i]);
            start = i + 1;
        }
    }
    out.push(&prose[start..]);
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

/// Inline markers of a text: every `[...]` whose comma- or semicolon-separated parts each
/// start with `S` and a digit, as written (`[S1]` → `S1`; `[S1, S2]` → `S1`, `S2`).
/// Returns the marker strings and the text with the markers removed (for the figure check,
/// so a marker's number is not taken for a figure).
fn markers(text: &str) -> (Vec<&str>, String) {
    let mut found = Vec::new();
    let mut rest = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(open) = text[i..].find('[') {
        let open = i + open;
        rest.push_str(&text[i..open]);
        let after = &text[open + 1..];
        // Markers are short; a `[` with no `]` within 64 bytes is text.
        let close = after.char_indices().take(64).find(|(_, c)| *c == ']');
        let parts: Option<Vec<&str>> = close.map(|(at, _)| {
            after[..at]
                .split([',', ';'])
                .map(str::trim)
                .collect::<Vec<_>>()
        });
        match (close, parts) {
            (Some((at, _)), Some(parts))
                if parts.iter().all(|p| {
                    let mut cs = p.chars();
                    cs.next() == Some('S') && cs.next().is_some_and(|c| c.is_ascii_digit())
                }) =>
            {
                found.extend(parts);
                i = open + 1 + at + 1;
            }
            _ => {
                rest.push('[');
                i = open + 1;
            }
        }
    }
    rest.push_str(&text[i..]);
    (found, rest)
}

/// A source as the model was shown it: its document's title and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceText<'a> {
    pub title: Option<&'a str>,
    pub text: &'a str,
}

impl<'a> SourceText<'a> {
    /// A source shown without a title.
    pub fn untitled(text: &'a str) -> Self {
        SourceText { title: None, text }
    }
}

/// Judge a raw answer response against the sources it was asked about: `sources[0]` is
/// the text shown as `S1`, and so on.
pub fn judge_answer(
    config: &AnswerConfig,
    contract: &Contract,
    question: &str,
    sources: &[SourceText<'_>],
    raw: &[u8],
) -> AnswerJudgement {
    let v = match decode::parse(raw) {
        Ok(v) => v,
        Err(e) => return AnswerJudgement::rejected((e.reason, e.detail)),
    };
    // v2 holds v1's root under `reply`; nothing else may stand beside it.
    let reply = match contract.version {
        1 => Ok(&v),
        _ => fields(&v, "the response", ["reply"]).map(|[reply]| reply),
    };
    let (prose, cited, found) = match reply.and_then(answer_fields) {
        Ok(x) => x,
        Err(f) => return AnswerJudgement::rejected(f),
    };

    let mut j = Judge {
        config,
        rejections: Vec::new(),
        warnings: Vec::new(),
    };
    // Layer 3, structural: every handle resolves to a source that was sent.
    let (answer, unknown) = Answer::resolve(question, sources, prose, cited);
    j.check(AnswerCheck::HandleKnown, Reason::UnknownHandle, || {
        (!unknown.is_empty()).then(|| {
            format!(
                "{} not among the {} source(s) sent",
                unknown.join(", "),
                sources.len()
            )
        })
    });
    if found {
        j.judge_found(&answer);
    } else {
        j.judge_not_found(&answer);
    }

    let accepted = j.rejections.is_empty().then(|| AcceptedAnswer {
        prose: prose.to_owned(),
        citations: answer.citations,
        found,
    });
    AnswerJudgement {
        accepted,
        rejections: j.rejections,
        warnings: j.warnings,
    }
}

/// The response's three fields, typed: the answer's prose, its citations as written, and
/// whether it says the sources answer.
fn answer_fields<'j>(v: &'j Json<'_>) -> Result<(&'j str, Vec<&'j str>, bool), Fail> {
    let [answer, citations, found] = fields(v, "the response", ["answer", "citations", "found"])?;
    let answer = string(answer, "answer", bounds::ANSWER_MAX_CHARS)?;
    let citations = array(citations, "citations", bounds::MAX_CITATIONS)?
        .iter()
        .map(|c| string(c, "citations", bounds::SOURCE_HANDLE_MAX_CHARS))
        .collect::<Result<Vec<&str>, Fail>>()?;
    let found = match found {
        Json::Bool(b) => *b,
        other => {
            return Err((
                Reason::Schema,
                format!("\"found\" is {}, not a boolean", other.type_name()),
            ));
        }
    };
    Ok((answer, citations, found))
}

/// The source `s` names, if it is one that was sent.
fn resolve(sources: &[SourceText<'_>], s: &str) -> Option<SourceHandle> {
    SourceHandle::parse(s)
        .ok()
        .filter(|h| h.index() < sources.len())
}

/// An answer with its handles resolved against the sources sent.
struct Answer<'a> {
    /// The question asked: a short answer ("Gaza City [S1].") is read with it.
    question: &'a str,
    sources: &'a [SourceText<'a>],
    /// Each source's windows for the support check, built when first needed.
    windows: Vec<std::cell::OnceCell<Vec<Window>>>,
    /// One support check for the whole answer, so its word cache serves every sentence.
    support: crate::support::Support,
    prose: &'a str,
    /// The "citations" field as written.
    cited: Vec<&'a str>,
    /// The cited sources that were sent, each once, in the order first cited.
    citations: Vec<SourceHandle>,
    /// The inline markers ("[S1]") as written.
    inline: Vec<&'a str>,
    /// The marked sources that were sent.
    marked: BTreeSet<SourceHandle>,
    /// The prose with its markers taken out.
    without_markers: String,
}

impl<'a> Answer<'a> {
    /// The answer, and each citation or marker that names no source sent.
    fn resolve(
        question: &'a str,
        sources: &'a [SourceText<'a>],
        prose: &'a str,
        cited: Vec<&'a str>,
    ) -> (Self, Vec<String>) {
        let (inline, without_markers) = markers(prose);
        let mut citations: Vec<SourceHandle> = Vec::new();
        let mut unknown: Vec<String> = Vec::new();
        for c in &cited {
            match resolve(sources, c) {
                Some(h) if !citations.contains(&h) => citations.push(h),
                Some(_) => {}
                None => unknown.push(format!("citation {}", excerpt(c, 12))),
            }
        }
        let mut marked: BTreeSet<SourceHandle> = BTreeSet::new();
        for m in &inline {
            match resolve(sources, m) {
                Some(h) => {
                    marked.insert(h);
                }
                None => unknown.push(format!(
                    "marker [{}]",
                    relata_core::text::head_chars(m, 12).0
                )),
            }
        }
        let answer = Answer {
            question,
            sources,
            windows: sources.iter().map(|_| std::cell::OnceCell::new()).collect(),
            support: crate::support::Support::new(Default::default()),
            prose,
            cited,
            citations,
            inline,
            marked,
            without_markers,
        };
        (answer, unknown)
    }

    /// Sources marked but not cited, or cited but never marked.
    fn marker_mismatch(&self) -> Option<String> {
        let cited_set: BTreeSet<SourceHandle> = self.citations.iter().copied().collect();
        let not_cited: Vec<String> = self
            .marked
            .difference(&cited_set)
            .map(|h| h.to_string())
            .collect();
        let not_marked: Vec<String> = cited_set
            .difference(&self.marked)
            .map(|h| h.to_string())
            .collect();
        let mut parts = Vec::new();
        if !not_cited.is_empty() {
            parts.push(format!("marked but not cited: {}", not_cited.join(", ")));
        }
        if !not_marked.is_empty() {
            parts.push(format!("cited but never marked: {}", not_marked.join(", ")));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// Figures in the answer that no cited source holds, as figures or spelled out.
    fn figures_not_cited(&self) -> Option<String> {
        let sources = self.sources;
        let have: Vec<_> = self
            .citations
            .iter()
            .flat_map(|h| figures(sources[h.index()].text))
            .collect();
        let missing: Vec<String> = figures(&self.without_markers)
            .into_iter()
            .filter(|f| {
                !have.contains(f)
                    && !self
                        .citations
                        .iter()
                        .any(|h| crate::text::spelled_in(f, sources[h.index()].text))
            })
            .take(5)
            .map(|f| excerpt(&f, 20))
            .collect();
        (!missing.is_empty()).then(|| {
            format!(
                "figure(s) in the answer found in no cited source: {}",
                missing.join(", ")
            )
        })
    }

    /// An answer that is not a statement ("Gaza City", "64", "The Museo del Prado in
    /// Madrid") read with the names and figures of its question: the support check then
    /// asks a cited sentence to hold the answer *and* what the question is about, so "Warsaw"
    /// to "Where did Pierre Curie die?" is not supported by a sentence about Marie Curie.
    /// A question with no name or figure lends all its words. A statement is read as
    /// written.
    fn read_with_question(&self, bare: &str) -> String {
        let fragment = short(bare) || crate::clause::read(bare).verb.is_none();
        if !fragment {
            return bare.to_owned();
        }
        let terms: Vec<&str> = self
            .question
            .split_whitespace()
            .skip(1)
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
            .filter(|w| w.starts_with(|c: char| c.is_uppercase() || c.is_ascii_digit()))
            .collect();
        if terms.is_empty() {
            format!("{} {bare}", self.question.trim().trim_end_matches('?'))
        } else {
            format!("{bare} {}", terms.join(" "))
        }
    }

    /// Why a short answer is degenerate, or `None` when, read with its question, a
    /// sentence of a cited source supports it: then it is an answer, not a fragment
    /// ("Gaza City [S1]." to "What is the capital of the Gaza Strip?").
    fn short_unsupported(&self, bare: &str, too_short: String) -> Option<String> {
        if self.citations.is_empty() || !self.support.has_content(self.question) {
            return Some(too_short);
        }
        let statement = self.read_with_question(bare);
        // Marked prose may join its marked passages; unmarked prose may not.
        let together = !self.inline.is_empty();
        self.supported_by_window(&statement, &self.citations, together)
            .err()
            .map(|why| {
                format!("{too_short}; read with the question, no cited sentence supports it: {why}")
            })
    }

    /// Sentences the sources they cite do not support.
    ///
    /// A sentence is judged against windows of its cited passages, not against them
    /// whole: one sentence of a passage, or two adjacent ones, must support it. Read whole,
    /// a passage lends a sentence words from anywhere in it, and a negation anywhere in it
    /// ("She never won …") reads as negating a sentence drawn from elsewhere ("Marie Curie
    /// was born in Warsaw"). A sentence citing several passages may also draw on them
    /// together, as a combined answer does ("born in A [S1] and died in B [S2]").
    fn unsupported_sentences(&self) -> Option<String> {
        let mut unsupported = Vec::new();
        // Prose with no marker at all (what small models write) is judged sentence by
        // sentence against every source it cites.
        let unmarked = self.inline.is_empty();
        for sentence in answer_sentences(self.prose) {
            let (marks, bare) = markers(sentence);
            let cited: BTreeSet<SourceHandle> = if unmarked {
                self.citations.iter().copied().collect()
            } else {
                marks
                    .iter()
                    .filter_map(|m| resolve(self.sources, m))
                    .collect()
            };
            if cited.is_empty() {
                continue;
            }
            let handles: Vec<SourceHandle> = cited.iter().copied().collect();
            let statement = self.read_with_question(bare.trim());
            if let Err(why) = self.supported_by_window(&statement, &handles, !unmarked) {
                let shown: Vec<String> = cited.iter().map(|h| h.to_string()).collect();
                unsupported.push(format!(
                    "{} not supported by {}: {why}",
                    excerpt(bare.trim(), 60),
                    shown.join(", ")
                ));
            }
        }
        (!unsupported.is_empty()).then(|| unsupported.join("; "))
    }

    /// Whether some window of the `cited` passages supports `statement`: one sentence of
    /// a passage, two adjacent sentences, or, when the statement's own markers cite
    /// several passages (`together`), all of them together. Prose with no marker names no
    /// passage for any of its parts, so each of its sentences must stand on one passage.
    /// `Err` holds why the window sharing most of the statement's words does not.
    fn supported_by_window(
        &self,
        statement: &str,
        cited: &[SourceHandle],
        together: bool,
    ) -> Result<(), String> {
        let joined = (together && cited.len() > 1).then(|| Window {
            text: cited
                .iter()
                .map(|h| self.sources[h.index()].text)
                .collect::<Vec<_>>()
                .join("\n"),
            context: Vec::new(),
        });
        let windows = cited
            .iter()
            .flat_map(|h| self.windows_of(*h))
            .chain(joined.as_ref());
        let said: BTreeSet<String> = words(statement).collect();
        let mut best: Option<(usize, String)> = None;
        for window in windows {
            let claim = crate::support::ClaimText {
                statement,
                quote: &window.text,
                context: &window.context,
                referent_required: false,
            };
            match self.support.unsupported(claim) {
                Ok(_) => return Ok(()),
                Err(why) => {
                    let shared = words(&window.text).filter(|w| said.contains(w)).count();
                    if best.as_ref().is_none_or(|(n, _)| shared > *n) {
                        best = Some((shared, why));
                    }
                }
            }
        }
        Err(best.map_or_else(
            || "the cited sources hold no sentence".to_owned(),
            |(_, why)| why,
        ))
    }

    /// The windows of source `h`: each sentence, and each with the one after it. A window
    /// whose first sentence refers back ("Its capital and largest city is Gaza City.") is
    /// read with its document's title as the thing referred to, as the model read it.
    fn windows_of(&self, h: SourceHandle) -> &[Window] {
        self.windows[h.index()].get_or_init(|| {
            let source = self.sources[h.index()];
            let sentences = relata_core::sentences::split(source.text, 1, 1, usize::MAX);
            let mut out = Vec::with_capacity(2 * sentences.len());
            for (k, s) in sentences.iter().enumerate() {
                let context: Vec<String> = source
                    .title
                    .filter(|_| crate::clause::read(s).refers_back())
                    .map(|t| vec![bare_title(t).to_owned()])
                    .unwrap_or_default();
                out.push(Window {
                    text: (*s).to_owned(),
                    context: context.clone(),
                });
                if let Some(next) = sentences.get(k + 1) {
                    out.push(Window {
                        text: format!("{s} {next}"),
                        context,
                    });
                }
            }
            out
        })
    }
}

/// A stretch of a passage the support check reads a sentence against, with what its
/// opening refers to.
struct Window {
    text: String,
    context: Vec<String>,
}

/// A document title without its disambiguation ("Mirror (1975 film)" → "Mirror").
fn bare_title(title: &str) -> &str {
    match title.rfind(" (") {
        Some(at) if title.ends_with(')') => &title[..at],
        _ => title,
    }
}

/// The lowercased runs of letters and digits of `text`.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// Runs the configurable checks and collects everything they found.
struct Judge<'c> {
    config: &'c AnswerConfig,
    rejections: Vec<AnswerRejection>,
    warnings: Vec<Finding>,
}

impl Judge<'_> {
    /// A rejecting check: at severity `warn` its problem becomes a `demoted` finding.
    fn check(
        &mut self,
        check: AnswerCheck,
        reason: Reason,
        problem: impl FnOnce() -> Option<String>,
    ) {
        let setting = self.config.setting(check);
        if !setting.enabled {
            return;
        }
        if let Some(detail) = problem() {
            match setting.severity {
                Severity::Reject => self.rejections.push(AnswerRejection {
                    reason,
                    detail: bounded(detail),
                }),
                Severity::Warn => self.warnings.push(Finding {
                    warning: Warning::Demoted,
                    reason: Some(reason),
                    detail: bounded(detail),
                }),
            }
        }
    }

    /// A warning check: at severity `reject` its problem rejects as `reason`.
    fn warn(
        &mut self,
        check: AnswerCheck,
        warning: Warning,
        reason: Reason,
        problem: impl FnOnce() -> Option<String>,
    ) {
        let setting = self.config.setting(check);
        if !setting.enabled {
            return;
        }
        if let Some(detail) = problem() {
            match setting.severity {
                Severity::Warn => self.warnings.push(Finding {
                    warning,
                    reason: None,
                    detail: bounded(detail),
                }),
                Severity::Reject => self.rejections.push(AnswerRejection {
                    reason,
                    detail: bounded(detail),
                }),
            }
        }
    }

    /// The checks of an answer that says the sources answer.
    fn judge_found(&mut self, answer: &Answer<'_>) {
        self.check(AnswerCheck::Degenerate, Reason::Degenerate, || {
            let bare = collapse(&answer.without_markers);
            let core = bare.trim_matches(|c: char| !c.is_alphanumeric());
            if ANSWER_PLACEHOLDERS.contains(&lower(core).as_str()) {
                return Some(format!("a placeholder: {}", excerpt(&bare, 30)));
            }
            if let Some(empty) = degenerate(&bare, 1, 1) {
                return Some(empty);
            }
            if let Some(same) = tautology(&bare) {
                return Some(same);
            }
            if let Some(echo) = echo(answer.question, &bare) {
                return Some(echo);
            }
            let too_short = degenerate(&bare, bounds::ANSWER_MIN_CHARS, bounds::ANSWER_MIN_WORDS)?;
            answer.short_unsupported(bare.trim(), too_short)
        });
        self.warn(
            AnswerCheck::MarkersMatch,
            Warning::MarkerMismatch,
            Reason::Inconsistent,
            || answer.marker_mismatch(),
        );
        self.warn(
            AnswerCheck::FigureInSources,
            Warning::FigureNotInSources,
            Reason::Inconsistent,
            || answer.figures_not_cited(),
        );
        self.warn(
            AnswerCheck::CitationSupported,
            Warning::CitationUnsupported,
            Reason::Unsupported,
            || answer.unsupported_sentences(),
        );
        // An answer that says the sources do not answer while claiming they do: not
        // repaired into an abstention (output is never repaired), refused as inconsistent.
        self.check(AnswerCheck::Abstention, Reason::BadAbstention, || {
            let bare = collapse(&answer.without_markers);
            let said = bare.trim().trim_end_matches('.').to_lowercase();
            let abstention = ANSWER_ABSTENTION.trim_end_matches('.').to_lowercase();
            said.contains(&abstention)
                .then(|| "\"found\" is true but the answer is the abstention sentence".to_owned())
        });
        // Layer 4, structural: a found answer cites something.
        self.check(AnswerCheck::Cited, Reason::UncitedAnswer, || {
            answer.cited.is_empty().then(|| {
                "\"found\" is true and \"citations\" is empty: an answer with no source".to_owned()
            })
        });
    }

    /// The check of an answer that says the sources do not answer: it is the abstention
    /// sentence and cites nothing.
    fn judge_not_found(&mut self, answer: &Answer<'_>) {
        let norm = collapse(answer.prose);
        self.check(AnswerCheck::Abstention, Reason::BadAbstention, || {
            if !answer.cited.is_empty() {
                Some(format!(
                    "\"found\" is false but {} source(s) are cited",
                    answer.cited.len()
                ))
            } else if norm != ANSWER_ABSTENTION {
                Some(format!(
                    "\"found\" is false and the answer is {}, not the abstention sentence",
                    excerpt(&norm, 60)
                ))
            } else {
                None
            }
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const SOURCES: [&str; 6] = [
        "Marie Curie was born in Warsaw in 1867.",
        "She won the Nobel Prize in Physics in 1903, with Pierre Curie.",
        "Pierre Curie was a French physicist.",
        "The Eiffel Tower is located in Paris.",
        "It was completed in 1889.",
        "Warsaw is the capital of Poland.",
    ];

    /// The shipped gate with `citation_supported` at `warn`, so that each test sees every
    /// finding of an answer it accepts; the shipped severity is tested on its own.
    fn gate() -> AnswerConfig {
        let mut c = AnswerConfig::default();
        c.set(
            AnswerCheck::CitationSupported,
            CheckSetting {
                enabled: true,
                severity: Severity::Warn,
            },
        )
        .unwrap();
        c
    }

    fn untitled<'a>(texts: &[&'a str]) -> Vec<SourceText<'a>> {
        texts.iter().map(|t| SourceText::untitled(t)).collect()
    }

    /// `raw` judged as the answer to `question` over [`SOURCES`].
    fn asked(question: &str, raw: &str) -> AnswerJudgement {
        judge_answer(
            &gate(),
            &relata_core::ANSWER_V1,
            question,
            &untitled(&SOURCES),
            raw.as_bytes(),
        )
    }

    fn judge(raw: &str) -> AnswerJudgement {
        asked("", raw)
    }

    #[test]
    fn v2_judges_its_reply_as_v1_judges_the_root_and_nothing_beside_it() {
        let v2 = |raw: &str| {
            judge_answer(
                &gate(),
                &relata_core::ANSWER_V2,
                "",
                &untitled(&SOURCES),
                raw.as_bytes(),
            )
        };
        let j = v2(
            r#"{"reply": {"answer": "Marie Curie was born in Warsaw [S1].", "citations": ["S1"], "found": true}}"#,
        );
        assert_eq!(j.status(), AnswerStatus::Answered, "{:?}", j.rejections);
        let j = v2(&format!(
            r#"{{"reply": {{"answer": "{ANSWER_ABSTENTION}", "citations": [], "found": false}}}}"#
        ));
        assert_eq!(j.status(), AnswerStatus::Abstained);
        // The reply's own rules hold inside it.
        let j = v2(
            r#"{"reply": {"answer": "Marie Curie was born in Warsaw.", "citations": [], "found": true}}"#,
        );
        assert_eq!(reasons(&j), [Reason::UncitedAnswer]);
        // v1's shape is not v2's, and nothing may stand beside the reply.
        let j = v2(
            r#"{"answer": "Marie Curie was born in Warsaw [S1].", "citations": ["S1"], "found": true}"#,
        );
        assert_eq!(reasons(&j), [Reason::UnknownField]);
        let j = v2(
            r#"{"reply": {"answer": "Marie Curie was born in Warsaw [S1].", "citations": ["S1"], "found": true}, "note": "x"}"#,
        );
        assert_eq!(reasons(&j), [Reason::UnknownField]);
    }

    fn reasons(j: &AnswerJudgement) -> Vec<Reason> {
        j.rejections.iter().map(|r| r.reason).collect()
    }

    fn warnings(j: &AnswerJudgement) -> Vec<Warning> {
        j.warnings.iter().map(|f| f.warning).collect()
    }

    #[test]
    fn a_cited_answer_is_answered() {
        let j = judge(
            r#"{"answer": "Marie Curie was born in Warsaw in 1867 [S1].", "citations": ["S1"], "found": true}"#,
        );
        assert_eq!(j.status(), AnswerStatus::Answered, "{j:?}");
        let a = j.accepted().unwrap();
        assert_eq!(a.citations(), [SourceHandle::nth(1)]);
        assert!(a.found());
        assert!(j.warnings.is_empty(), "{j:?}");
    }

    #[test]
    fn the_exact_abstention_is_abstained() {
        let raw = format!(
            r#"{{"answer": "  {} ", "citations": [], "found": false}}"#,
            ANSWER_ABSTENTION
        );
        let j = judge(&raw);
        assert_eq!(j.status(), AnswerStatus::Abstained, "{j:?}");
    }

    #[test]
    fn syntactic_and_schema_layers_are_the_extract_gates() {
        let cases: &[(&str, Reason)] = &[
            ("", Reason::Empty),
            ("Sure! {\"answer\": \"x\"}", Reason::NotJson),
            (
                r#"{"answer": "a b c d e f", "citations": [], "found": false} {}"#,
                Reason::TrailingContent,
            ),
            (
                r#"{"answer": "x", "citations": [], "found": false, "sufficient": true}"#,
                Reason::UnknownField,
            ),
            (r#"{"answer": "x", "citations": []}"#, Reason::Schema),
            (
                r#"{"answer": "x", "citations": [], "found": "yes"}"#,
                Reason::Schema,
            ),
            (
                r#"{"answer": "x", "citations": [1], "found": true}"#,
                Reason::Schema,
            ),
            (
                r#"{"answer": "x\u0000", "citations": ["S1"], "found": true}"#,
                Reason::Unstorable,
            ),
        ];
        for (raw, want) in cases {
            let j = judge(raw);
            assert_eq!(j.status(), AnswerStatus::Degraded, "{raw}");
            assert_eq!(reasons(&j), [*want], "{raw}");
        }
        let long = format!(
            r#"{{"answer": "{}", "citations": ["S1"], "found": true}}"#,
            "a".repeat(bounds::ANSWER_MAX_CHARS + 1)
        );
        assert_eq!(reasons(&judge(&long)), [Reason::Schema]);
        let many: Vec<String> = (0..=bounds::MAX_CITATIONS)
            .map(|_| "\"S1\"".into())
            .collect();
        let raw = format!(
            r#"{{"answer": "Curie was born in Warsaw [S1].", "citations": [{}], "found": true}}"#,
            many.join(",")
        );
        assert_eq!(reasons(&judge(&raw)), [Reason::Schema]);
        let big = vec![b' '; bounds::MAX_RESPONSE_BYTES + 1];
        let j = judge_answer(
            &gate(),
            &relata_core::ANSWER_V1,
            "",
            &untitled(&SOURCES),
            &big,
        );
        assert_eq!(reasons(&j), [Reason::TooLarge]);
        // The one tolerated deviation: a single outer fence.
        let fenced = "```json\n{\"answer\": \"Curie was born in Warsaw [S1].\", \"citations\": [\"S1\"], \"found\": true}\n```";
        assert_eq!(judge(fenced).status(), AnswerStatus::Answered);
    }

    #[test]
    fn a_handle_that_was_not_sent_degrades_the_answer() {
        // Six sources were sent; S99 and S7 name nothing.
        let j = judge(
            r#"{"answer": "Marie Curie was born in Warsaw [S1].", "citations": ["S1", "S99"], "found": true}"#,
        );
        assert_eq!(j.status(), AnswerStatus::Degraded);
        assert_eq!(reasons(&j), [Reason::UnknownHandle]);
        assert!(j.rejections[0].detail.contains("S99"), "{j:?}");
        let j = judge(
            r#"{"answer": "Marie Curie was born in Warsaw [S7].", "citations": ["S1"], "found": true}"#,
        );
        assert_eq!(reasons(&j), [Reason::UnknownHandle]);
        assert!(j.rejections[0].detail.contains("[S7]"), "{j:?}");
        for bad in ["s1", "S01", "C1", "1", "S0"] {
            let raw = format!(
                r#"{{"answer": "Marie Curie was born in Warsaw.", "citations": ["{bad}"], "found": true}}"#
            );
            assert_eq!(reasons(&judge(&raw)), [Reason::UnknownHandle], "{bad}");
        }
    }

    #[test]
    fn degenerate_prose_degrades_the_answer() {
        for prose in [
            "sufficient",
            "Sufficient.",
            "answer",
            "N/A",
            "...",
            "Warsaw [S1]",
            "string",
        ] {
            let raw = format!(r#"{{"answer": "{prose}", "citations": ["S1"], "found": true}}"#);
            let j = judge(&raw);
            assert_eq!(reasons(&j), [Reason::Degenerate], "{prose}: {j:?}");
        }
    }

    #[test]
    fn a_short_answer_is_read_with_its_question() {
        let ask = |question: &str, prose: &str, cite: &str| {
            asked(
                question,
                &format!(r#"{{"answer": "{prose}", "citations": [{cite}], "found": true}}"#),
            )
        };
        // A name that answers the question from the sentence cited.
        let j = ask("Where was Marie Curie born?", "Warsaw [S1].", r#""S1""#);
        assert_eq!(j.status(), AnswerStatus::Answered, "{j:?}");
        assert!(j.warnings.is_empty(), "{j:?}");
        // "It was completed in 1889." names the tower only with the source before it.
        let j = ask(
            "When was the Eiffel Tower completed?",
            "1889 [S4, S5].",
            r#""S4", "S5""#,
        );
        assert_eq!(j.status(), AnswerStatus::Answered, "{j:?}");
        let j = ask(
            "When was the Eiffel Tower completed?",
            "1889 [S5].",
            r#""S5""#,
        );
        assert_eq!(reasons(&j), [Reason::Degenerate], "{j:?}");
        // A name from the source that the question and the sentence do not join: a fragment.
        let j = ask("Where did Pierre Curie die?", "Warsaw [S1].", r#""S1""#);
        assert_eq!(reasons(&j), [Reason::Degenerate], "{j:?}");
        assert!(
            j.rejections[0].detail.contains("read with the question"),
            "{j:?}"
        );
        // The source's word, the wrong source.
        let j = ask("Where was Marie Curie born?", "Paris [S4].", r#""S4""#);
        assert_eq!(reasons(&j), [Reason::Degenerate], "{j:?}");
        // A question of function words alone gives the answer nothing to be read with.
        let j = ask("Who is it?", "Warsaw [S1].", r#""S1""#);
        assert_eq!(reasons(&j), [Reason::Degenerate], "{j:?}");
        // Placeholders stay placeholders whatever the question.
        let j = ask("What is sufficient?", "sufficient", r#""S1""#);
        assert_eq!(reasons(&j), [Reason::Degenerate], "{j:?}");
    }

    #[test]
    fn a_sentence_that_refers_back_is_read_with_its_title_and_a_fragment_with_its_question() {
        let gaza = "The Gaza Strip is a territory on the Mediterranean coast. \
                    It borders Egypt on the southwest. Its capital and largest city is Gaza City.";
        let prado =
            "Las Meninas is a painting by Velázquez. It hangs in the Museo del Prado in Madrid.";
        let louvre = "The Louvre is the world's most-visited museum, in Paris.";
        let ask = |sources: &[SourceText<'_>], question: &str, prose: &str| {
            let raw = format!(r#"{{"answer": "{prose}", "citations": ["S1"], "found": true}}"#);
            judge_answer(
                &gate(),
                &relata_core::ANSWER_V1,
                question,
                sources,
                raw.as_bytes(),
            )
        };
        let titled = |title, text| {
            [SourceText {
                title: Some(title),
                text,
            }]
        };
        let city = "What is the biggest city in the Gaza Strip?";
        let j = ask(&titled("Gaza Strip", gaza), city, "Gaza City [S1].");
        assert_eq!(j.status(), AnswerStatus::Answered, "{j:?}");
        assert!(j.warnings.is_empty(), "{j:?}");
        // Without the title no sentence says whose capital Gaza City is.
        let j = ask(&[SourceText::untitled(gaza)], city, "Gaza City [S1].");
        assert_eq!(reasons(&j), [Reason::Degenerate], "{j:?}");
        // A phrase with no verb is read with the question's names: the museum must be
        // in a sentence about Las Meninas.
        let museum = "Which museum holds Velázquez's Las Meninas?";
        let j = ask(
            &titled("Las Meninas", prado),
            museum,
            "The Museo del Prado in Madrid [S1].",
        );
        assert!(j.warnings.is_empty(), "{j:?}");
        let j = ask(
            &titled("Louvre", louvre),
            museum,
            "The Louvre museum in Paris [S1].",
        );
        assert!(
            warnings(&j).contains(&Warning::CitationUnsupported),
            "{j:?}"
        );
    }

    #[test]
    fn a_piece_of_the_question_is_degenerate() {
        let ask = |question: &str, prose: &str| {
            asked(
                question,
                &format!(r#"{{"answer": "{prose}", "citations": ["S6"], "found": true}}"#),
            )
        };
        let question = "Which city is the capital of Poland?";
        let j = ask(question, "Poland [S6].");
        assert_eq!(reasons(&j), [Reason::Degenerate], "{j:?}");
        let j = ask(question, "The capital of Poland [S6].");
        assert_eq!(reasons(&j), [Reason::Degenerate], "{j:?}");
        let j = ask(question, "Warsaw [S6].");
        assert_eq!(j.status(), AnswerStatus::Answered, "{j:?}");
    }

    #[test]
    fn a_thing_said_to_be_itself_is_degenerate() {
        let j = judge(
            r#"{"answer": "Warsaw is the Warsaw [S6].", "citations": ["S6"], "found": true}"#,
        );
        assert_eq!(reasons(&j), [Reason::Degenerate], "{j:?}");
        let j = judge(
            r#"{"answer": "Warsaw is the capital of Poland [S6].", "citations": ["S6"], "found": true}"#,
        );
        assert_eq!(j.status(), AnswerStatus::Answered, "{j:?}");
    }

    #[test]
    fn sufficient_with_no_citation_is_degraded_for_both_reasons() {
        let j = judge(r#"{"answer": "sufficient", "found": true, "citations": []}"#);
        assert_eq!(j.status(), AnswerStatus::Degraded);
        assert_eq!(reasons(&j), [Reason::Degenerate, Reason::UncitedAnswer]);
    }

    #[test]
    fn a_found_answer_without_citations_is_uncited() {
        let j = judge(
            r#"{"answer": "Marie Curie was born in Warsaw [S1].", "citations": [], "found": true}"#,
        );
        assert_eq!(reasons(&j), [Reason::UncitedAnswer]);
    }

    #[test]
    fn an_abstention_must_be_the_sentence_and_cite_nothing() {
        let j = judge(r#"{"answer": "I don't know.", "citations": [], "found": false}"#);
        assert_eq!(reasons(&j), [Reason::BadAbstention]);
        let raw =
            format!(r#"{{"answer": "{ANSWER_ABSTENTION}", "citations": ["S2"], "found": false}}"#);
        assert_eq!(reasons(&judge(&raw)), [Reason::BadAbstention]);
        // Prose that answers while saying it did not find an answer.
        let j = judge(
            r#"{"answer": "Marie Curie was born in Warsaw.", "citations": [], "found": false}"#,
        );
        assert_eq!(reasons(&j), [Reason::BadAbstention]);
    }

    #[test]
    fn the_abstention_sentence_under_found_true_is_refused_not_read_as_an_abstention() {
        for raw in [
            format!(r#"{{"answer": "{ANSWER_ABSTENTION}", "citations": ["S1"], "found": true}}"#),
            format!(
                r#"{{"answer": "{} [S1]", "citations": ["S1"], "found": true}}"#,
                ANSWER_ABSTENTION.to_uppercase()
            ),
        ] {
            let j = judge(&raw);
            assert_eq!(j.status(), AnswerStatus::Degraded, "{raw}");
            assert!(reasons(&j).contains(&Reason::BadAbstention), "{raw}: {j:?}");
        }
        // An answer that merely mentions the sources is not the sentence.
        let j = judge(
            r#"{"answer": "The sources say Marie Curie was born in Warsaw [S1].", "citations": ["S1"], "found": true}"#,
        );
        assert_eq!(j.status(), AnswerStatus::Answered, "{j:?}");
    }

    #[test]
    fn markers_and_citations_that_disagree_warn() {
        let j = judge(
            r#"{"answer": "Curie was born in Warsaw [S1] and won the Nobel Prize [S2].", "citations": ["S1"], "found": true}"#,
        );
        assert_eq!(j.status(), AnswerStatus::Answered);
        assert_eq!(warnings(&j), [Warning::MarkerMismatch]);
        assert!(j.warnings[0].detail.contains("marked but not cited: S2"));
        let j = judge(
            r#"{"answer": "Curie was born in Warsaw [S1].", "citations": ["S1", "S6"], "found": true}"#,
        );
        assert_eq!(warnings(&j), [Warning::MarkerMismatch]);
        assert!(j.warnings[0].detail.contains("cited but never marked: S6"));
        // Markers listing several sources count for each.
        let j = judge(
            r#"{"answer": "Curie was born in Warsaw, capital of Poland [S1, S6].", "citations": ["S1", "S6"], "found": true}"#,
        );
        assert!(j.warnings.is_empty(), "{j:?}");
    }

    #[test]
    fn a_figure_in_no_cited_source_warns() {
        let j = judge(
            r#"{"answer": "Marie Curie was born in Warsaw in 1868 [S1].", "citations": ["S1"], "found": true}"#,
        );
        assert_eq!(j.status(), AnswerStatus::Answered);
        // The sentence is not its source's either: both warnings, each with its own words.
        assert_eq!(
            warnings(&j),
            [Warning::FigureNotInSources, Warning::CitationUnsupported]
        );
        assert!(j.warnings[0].detail.contains("1868"), "{j:?}");
        // 1889 is in S5, which is not cited (and S4 says nothing of finishing either).
        let j = judge(
            r#"{"answer": "The tower in Paris was finished in 1889 [S4].", "citations": ["S4"], "found": true}"#,
        );
        assert_eq!(
            warnings(&j),
            [Warning::FigureNotInSources, Warning::CitationUnsupported]
        );
        // The marker's own number is not a figure.
        let j = judge(
            r#"{"answer": "The Eiffel Tower is located in Paris [S4].", "citations": ["S4"], "found": true}"#,
        );
        assert!(j.warnings.is_empty(), "{j:?}");
    }

    #[test]
    fn a_number_its_source_spells_out_is_found_there() {
        let sources = ["Joni Mitchell has won eleven Grammy Awards."];
        let raw = r#"{"answer": "Joni Mitchell won 11 Grammy Awards [S1].", "citations": ["S1"], "found": true}"#;
        let j = judge_answer(
            &gate(),
            &relata_core::ANSWER_V1,
            "",
            &untitled(&sources),
            raw.as_bytes(),
        );
        assert!(j.warnings.is_empty(), "{j:?}");
        let raw = r#"{"answer": "Joni Mitchell won 12 Grammy Awards [S1].", "citations": ["S1"], "found": true}"#;
        let j = judge_answer(
            &gate(),
            &relata_core::ANSWER_V1,
            "",
            &untitled(&sources),
            raw.as_bytes(),
        );
        assert_eq!(
            warnings(&j),
            [Warning::FigureNotInSources, Warning::CitationUnsupported]
        );
    }

    #[test]
    fn a_sentence_its_marked_sources_do_not_support_warns() {
        let cases = [
            // Supported, sentence by sentence, each by the source it marks.
            (
                r#"{"answer": "Marie Curie was born in Warsaw [S1]. She won the Nobel Prize in Physics [S2].", "citations": ["S1", "S2"], "found": true}"#,
                false,
            ),
            (
                r#"{"answer": "Warsaw, the capital of Poland [S6].", "citations": ["S6"], "found": true}"#,
                false,
            ),
            // A name the source never gives.
            (
                r#"{"answer": "Eugen Brecht was born in Warsaw [S1].", "citations": ["S1"], "found": true}"#,
                true,
            ),
            // The source negated.
            (
                r#"{"answer": "Marie Curie was not born in Warsaw [S1].", "citations": ["S1"], "found": true}"#,
                true,
            ),
            // True of the sources, but not of the one it marks.
            (
                r#"{"answer": "Pierre Curie was a French physicist [S1].", "citations": ["S1"], "found": true}"#,
                true,
            ),
        ];
        for (raw, unsupported) in cases {
            let j = judge(raw);
            assert_eq!(j.status(), AnswerStatus::Answered, "{raw}");
            assert_eq!(
                warnings(&j).contains(&Warning::CitationUnsupported),
                unsupported,
                "{raw}: {j:?}"
            );
        }
        let j = judge(cases[2].0);
        assert!(
            j.warnings[0].detail.contains("not supported by S1"),
            "{j:?}"
        );
        // No marker anywhere: each sentence against every cited source.
        let j = judge(
            r#"{"answer": "Eugen Brecht was born in Warsaw.", "citations": ["S1", "S6"], "found": true}"#,
        );
        assert!(
            warnings(&j).contains(&Warning::CitationUnsupported),
            "{j:?}"
        );
        assert!(
            j.warnings.iter().any(|w| w.detail.contains("S1, S6")),
            "{j:?}"
        );
        // A sentence marking two sources may join them; unmarked prose names no source for
        // either half, so each sentence must stand on one source.
        let j = judge(
            r#"{"answer": "Marie Curie was born in Warsaw, the capital of Poland [S1, S6].", "citations": ["S1", "S6"], "found": true}"#,
        );
        assert!(
            !warnings(&j).contains(&Warning::CitationUnsupported),
            "{j:?}"
        );
        let j = judge(
            r#"{"answer": "Marie Curie was born in Warsaw, the capital of Poland.", "citations": ["S1", "S6"], "found": true}"#,
        );
        assert!(
            warnings(&j).contains(&Warning::CitationUnsupported),
            "{j:?}"
        );
        // At `reject` it degrades the answer.
        let mut c = AnswerConfig::default();
        c.set(
            AnswerCheck::CitationSupported,
            CheckSetting {
                enabled: true,
                severity: Severity::Reject,
            },
        )
        .unwrap();
        let j = judge_answer(
            &c,
            &relata_core::ANSWER_V1,
            "",
            &untitled(&SOURCES),
            cases[2].0.as_bytes(),
        );
        assert_eq!(reasons(&j), [Reason::Unsupported]);
    }

    #[test]
    fn citation_support_reads_a_passage_by_sentence_windows() {
        let passage = [
            "Marie Curie never won an Olympic medal. Marie Curie was born in \
             Warsaw in 1867. She moved to Paris in 1891. Her daughter Irene was a chemist.",
        ];
        let judge = |answer: &str| {
            let raw =
                format!(r#"{{"answer": "{answer} [S1].", "citations": ["S1"], "found": true}}"#);
            judge_answer(
                &gate(),
                &relata_core::ANSWER_V1,
                "",
                &untitled(&passage),
                raw.as_bytes(),
            )
        };
        // A negation in another sentence does not negate the one the answer is drawn from
        // (read whole, the passage gave "Marie Curie" from the negated sentence).
        let j = judge("Marie Curie was born in Warsaw");
        assert!(
            !warnings(&j).contains(&Warning::CitationUnsupported),
            "{j:?}"
        );
        // Two adjacent sentences together support a sentence joining them.
        let j = judge("Marie Curie was born in Warsaw in 1867 and moved to Paris in 1891");
        assert!(
            !warnings(&j).contains(&Warning::CitationUnsupported),
            "{j:?}"
        );
        // The negation still counts in its own sentence.
        let j = judge("Marie Curie won an Olympic medal");
        assert!(
            warnings(&j).contains(&Warning::CitationUnsupported),
            "{j:?}"
        );
        // Words pooled from sentences far apart support nothing: the passage never says
        // Irene was born in Warsaw.
        let j = judge("Irene was born in Warsaw");
        assert!(
            warnings(&j).contains(&Warning::CitationUnsupported),
            "{j:?}"
        );
    }

    #[test]
    fn warning_checks_reject_when_set_to_reject_and_rejecting_checks_demote() {
        let mut c = gate();
        let reject = CheckSetting {
            enabled: true,
            severity: Severity::Reject,
        };
        c.set(AnswerCheck::FigureInSources, reject).unwrap();
        let raw = br#"{"answer": "Marie Curie was born in Warsaw in 1868 [S1].", "citations": ["S1"], "found": true}"#;
        let j = judge_answer(&c, &relata_core::ANSWER_V1, "", &untitled(&SOURCES), raw);
        assert_eq!(reasons(&j), [Reason::Inconsistent]);

        let mut c = AnswerConfig::default();
        c.set(
            AnswerCheck::Degenerate,
            CheckSetting {
                enabled: true,
                severity: Severity::Warn,
            },
        )
        .unwrap();
        let j = judge_answer(
            &c,
            &relata_core::ANSWER_V1,
            "",
            &untitled(&SOURCES),
            br#"{"answer": "Warsaw [S1]", "citations": ["S1"], "found": true}"#,
        );
        assert_eq!(j.status(), AnswerStatus::Answered);
        assert_eq!(warnings(&j), [Warning::Demoted]);
        assert_eq!(j.warnings[0].reason, Some(Reason::Degenerate));

        let mut c = AnswerConfig::default();
        c.set(
            AnswerCheck::Abstention,
            CheckSetting {
                enabled: false,
                severity: Severity::Reject,
            },
        )
        .unwrap();
        let j = judge_answer(
            &c,
            &relata_core::ANSWER_V1,
            "",
            &untitled(&SOURCES),
            br#"{"answer": "No idea.", "citations": [], "found": false}"#,
        );
        assert_eq!(j.status(), AnswerStatus::Abstained);
    }

    #[test]
    fn structural_checks_cannot_be_switched_off_or_demoted() {
        let mut c = AnswerConfig::default();
        for check in [AnswerCheck::HandleKnown, AnswerCheck::Cited] {
            for setting in [
                CheckSetting {
                    enabled: false,
                    severity: Severity::Reject,
                },
                CheckSetting {
                    enabled: true,
                    severity: Severity::Warn,
                },
            ] {
                assert!(c.set(check, setting).is_err(), "{check}");
            }
        }
    }

    /// Fails if the shipped defaults stop rejecting any fatal answer check.
    #[test]
    fn the_default_configuration_rejects_on_every_fatal_check() {
        let c = AnswerConfig::default();
        for check in [
            AnswerCheck::HandleKnown,
            AnswerCheck::Cited,
            AnswerCheck::Degenerate,
            AnswerCheck::Abstention,
            AnswerCheck::CitationSupported,
        ] {
            let s = c.setting(check);
            assert!(s.enabled, "{check} is disabled by default");
            assert_eq!(s.severity, Severity::Reject, "{check} does not reject");
        }
        // A sentence its cited source does not support degrades the answer as shipped.
        let j = judge_answer(
            &c,
            &relata_core::ANSWER_V1,
            "",
            &untitled(&SOURCES),
            br#"{"answer": "Pierre Curie was a French physicist [S1].", "citations": ["S1"], "found": true}"#,
        );
        assert_eq!(reasons(&j), [Reason::Unsupported]);
        for check in [AnswerCheck::MarkersMatch, AnswerCheck::FigureInSources] {
            assert!(c.setting(check).enabled, "{check} is disabled by default");
        }
    }

    #[test]
    fn markers_are_found_without_taking_other_brackets() {
        let (m, rest) = markers("a [S1] b [S2, S3] c [see note] d [S4");
        assert_eq!(m, ["S1", "S2", "S3"]);
        assert_eq!(rest, "a  b  c [see note] d [S4");
        let (m, _) = markers("[S99][Sx]");
        assert_eq!(m, ["S99"]);
    }
}
