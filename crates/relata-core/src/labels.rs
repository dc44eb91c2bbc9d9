//! Closed label sets: metric labels and stored values.

use crate::closed_enum;

closed_enum! {
    /// Why model output (a whole response or one row of it) was rejected.
    ///
    /// Used verbatim as the `reason` label of `relata_model_invalid_output_total` and as
    /// the stored reason of an invalid-output row. Never extend it with free text: the
    /// human-readable detail travels beside it, not inside it.
    pub enum Reason: "reason" {
        /// Nothing but whitespace (or nothing at all).
        Empty = "empty",
        /// Larger than the response bound.
        TooLarge = "too_large",
        /// Not exactly one JSON value: prose around it, invalid UTF-8, NaN, nesting too deep.
        NotJson = "not_json",
        /// Something after the one JSON value, including a dangling fence.
        TrailingContent = "trailing_content",
        /// Wrong shape: missing field, wrong type, duplicate key, a length or count bound.
        Schema = "schema",
        /// A field the contract does not name.
        UnknownField = "unknown_field",
        /// A value outside a closed enum (entity type, relation).
        BadEnum = "bad_enum",
        /// A handle that was never shown to the model.
        UnknownHandle = "unknown_handle",
        /// A relation for a pair that was not asked for.
        UnrequestedPair = "unrequested_pair",
        /// The quote is not in the source, even after NFC and whitespace collapsing.
        QuoteNotFound = "quote_not_found",
        /// A placeholder, a field name, or text too short to carry meaning.
        Degenerate = "degenerate",
        /// The claim's statement is not supported by its own quote: a figure, a name or
        /// too many of its words are missing from the quote, a negation is on one side
        /// only, or its subject is grounded in neither the quote nor the chunk.
        Unsupported = "unsupported",
        /// A claim's subject is neither an accepted entity of the same response nor a
        /// name its chunk contains.
        UnknownSubject = "unknown_subject",
        /// An entity's name is not in its chunk: an entity is stored with the chunk's own
        /// text, never a name the model made up or reworded.
        NameNotFound = "name_not_found",
        /// A claim's statement cannot be read without its document: its subject is a
        /// pronoun, a demonstrative or a definite noun phrase without a name ("It …",
        /// "This method …", "The film …"), or it has no main clause ("Although …",
        /// "Directed by …").
        NotStandalone = "not_standalone",
        /// A claim's subject is not what its statement is about: not named in the
        /// statement's opening noun phrase ("film" for "The Academy Awards are …").
        WrongSubject = "wrong_subject",
        /// A row repeating an earlier accepted row.
        Duplicate = "duplicate",
        /// Fields of one row disagree in a way no other reason names (a figure in the
        /// statement that its quote lacks, when that check is set to reject).
        Inconsistent = "inconsistent",
        /// The provider stopped at the token limit (`finish_reason = "length"`).
        Truncated = "truncated",
        /// The provider reported a refusal instead of content.
        Refusal = "refusal",
        /// A string the store cannot hold: PostgreSQL text refuses NUL (U+0000), which JSON
        /// can carry as `\u0000`. Judged by the gate so the row is recorded once as
        /// invalid; left to the commit it would fail every time and be asked for again.
        Unstorable = "unstorable",
        /// An answer that says it was found (`found: true`) and cites nothing: the most
        /// dangerous kind of answer, prose with no source to check it against.
        UncitedAnswer = "uncited_answer",
        /// An abstention (`found: false`) that cites sources or is not the exact
        /// abstention sentence the prompt asks for.
        BadAbstention = "bad_abstention",
    }
}

closed_enum! {
    /// A non-fatal finding: the row is kept, flagged, and queued for review.
    pub enum Warning: "warning" {
        /// A number, year or percentage in a statement that its quote does not contain.
        FigureNotInQuote = "figure_not_in_quote",
        /// A check whose severity was lowered to `warn` found a problem; the reason is
        /// stored beside it.
        Demoted = "demoted",
        /// An answer's inline `[S1]` markers and its `citations` disagree: a marker that
        /// is not cited, or a citation with no marker in the prose.
        MarkerMismatch = "marker_mismatch",
        /// A number, year or percentage in an answer's prose that none of its cited
        /// sources contains.
        FigureNotInSources = "figure_not_in_sources",
        /// A sentence of an answer's prose that the sources it marks do not support.
        CitationUnsupported = "citation_unsupported",
    }
}

closed_enum! {
    /// A validation check that has its own `enabled` and `severity` settings.
    ///
    /// The syntactic and schema layers are not listed: they *are* the decoder, and there
    /// is no meaningful "off" for "is this JSON". Two listed checks are structural —
    /// `quote_found` and `handle_known` — because guarantees 5 and 6 depend on them; they
    /// exist here so their state is exported and logged like every other check, and
    /// configuration refuses to disable them.
    pub enum Check: "check" {
        QuoteFound = "quote_found",
        HandleKnown = "handle_known",
        PairRequested = "pair_requested",
        Degenerate = "degenerate",
        SubjectKnown = "subject_known",
        NoDuplicate = "no_duplicate",
        FigureInQuote = "figure_in_quote",
        Supported = "supported",
        /// An entity's name is its chunk's own text.
        NameFound = "name_found",
        /// A claim's statement reads alone.
        Standalone = "standalone",
        /// A claim's subject is named in its statement's opening noun phrase.
        SubjectTopic = "subject_topic",
    }
}

impl Check {
    /// A structural check cannot be disabled or demoted: without it a stored row would
    /// lose its link to the source (quotes) or could reference something never sent
    /// (handles).
    pub const fn is_structural(self) -> bool {
        matches!(self, Check::QuoteFound | Check::HandleKnown)
    }
}

closed_enum! {
    /// What a failing check does to its row.
    pub enum Severity: "severity" {
        Reject = "reject",
        Warn = "warn",
    }
}

closed_enum! {
    /// The kind of row inside a response.
    pub enum RowKind: "row kind" {
        Entity = "entity",
        Claim = "claim",
        Relation = "relation",
        /// A model's proposal that two entities are one thing (`relata.join`).
        Join = "join",
    }
}

closed_enum! {
    /// A model's verdict under `relata.join` v1 on whether two entities are one thing.
    /// Only `one` is a proposal a person decides; the others are kept as the model's word.
    pub enum JoinVerdict: "join verdict" {
        One = "one",
        Two = "two",
        Unsure = "unsure",
    }
}

closed_enum! {
    /// The closed set of entity types in `relata.extract` v1.
    pub enum EntityType: "entity type" {
        Person = "person",
        Organization = "organization",
        Location = "location",
        Event = "event",
        Work = "work",
        Concept = "concept",
        Other = "other",
    }
}

closed_enum! {
    /// The closed set of claim relations in `relata.classify` v1.
    pub enum RelationKind: "relation" {
        Supports = "supports",
        Contradicts = "contradicts",
        Refines = "refines",
        Unrelated = "unrelated",
    }
}

closed_enum! {
    /// A check of the answer gate (`relata.answer`) that has its own `enabled` and
    /// `severity` settings. `handle_known` and `cited` are structural: a citation that
    /// resolves to nothing, or an answer that cites nothing, is never an answer.
    pub enum AnswerCheck: "answer check" {
        /// Every citation and inline marker names a source that was sent.
        HandleKnown = "handle_known",
        /// `found: true` cites at least one source.
        Cited = "cited",
        /// The prose is not a placeholder, a field name or too short to mean anything.
        Degenerate = "degenerate",
        /// `found: false` has no citations and the exact abstention sentence; `found: true`
        /// is not the abstention sentence.
        Abstention = "abstention",
        /// Inline markers and `citations` name the same sources.
        MarkersMatch = "markers_match",
        /// Every figure of the prose is in a cited source.
        FigureInSources = "figure_in_sources",
        /// Every sentence of the prose that carries a marker is supported by the sources
        /// it marks, or, in prose with no marker at all, by the sources it cites (names,
        /// figures, negation and content words: the claims' support check).
        CitationSupported = "citation_supported",
    }
}

impl AnswerCheck {
    /// A structural check cannot be disabled or demoted.
    pub const fn is_structural(self) -> bool {
        matches!(self, AnswerCheck::HandleKnown | AnswerCheck::Cited)
    }
}

closed_enum! {
    /// How a question was answered: the `status` of an answer, stored and returned.
    pub enum AnswerStatus: "answer status" {
        /// The model's answer passed the gate and says it was found in the sources.
        Answered = "answered",
        /// No answer in the sources: no source was retrieved (the model was not asked),
        /// or the model's valid answer says so.
        Abstained = "abstained",
        /// The model's output failed the gate: no prose, the sources, the contradictions
        /// and the reasons.
        Degraded = "degraded",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_through_str_and_serde() {
        for r in Reason::ALL {
            assert_eq!(r.as_str().parse::<Reason>().unwrap(), *r);
            let json = serde_json::to_string(r).unwrap();
            assert_eq!(serde_json::from_str::<Reason>(&json).unwrap(), *r);
        }
        for c in Check::ALL {
            assert_eq!(c.as_str().parse::<Check>().unwrap(), *c);
        }
    }

    #[test]
    fn unknown_label_names_the_kind_and_the_choices() {
        let err = "Person".parse::<EntityType>().unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("entity type"), "{msg}");
        assert!(msg.contains("\"Person\""), "{msg}");
        assert!(msg.contains("person, organization"), "{msg}");
    }

    #[test]
    fn only_quote_and_handle_checks_are_structural() {
        let structural: Vec<_> = Check::ALL.iter().filter(|c| c.is_structural()).collect();
        assert_eq!(structural, [&Check::QuoteFound, &Check::HandleKnown]);
    }
}
