//! Layer 3, `supported`: does a claim's own quote say what its statement says?
//!
//! A verbatim quote proves that words exist in the source, not that the statement
//! paraphrases them. This check is deterministic, explainable and makes no model call:
//! it compares the *words* of the statement with the words of its quote, and it fails
//! closed — a statement is supported only when every one of these holds:
//!
//! 1. **Figures.** Every figure of the statement (the same tokenizer as
//!    `figure_not_in_quote`) occurs in the quote, and so does every number written as a
//!    word ("four", "dozen"). A number the quote lacks is the most common way a small
//!    model changes a fact.
//! 2. **Names.** Every capitalised word of the statement (a name: "Curie", "Warsaw",
//!    "Nobel") is found in the quote, compared after stemming. An entity swapped for
//!    another one is never "mostly" supported, so names do not count towards the share
//!    below, they are all required.
//! 3. **Share of content words.** Of the statement's other content words (not function
//!    words, not negations, not figures), at least [`SupportSettings::min_share`] are
//!    found in the quote after stemming (Snowball English, `rust-stemmers`), or share a
//!    stem prefix of at least five letters with a quote word ("American" / "America",
//!    "founder" / "founded").
//! 4. **Negation.** A negation ("not", "never", "no", "n't", "without", …) present on one
//!    side only makes the pair unsupported; "not only" is not a negation.
//! 5. **Subject.** The claim's subject is grounded: its words are in the quote, or in the
//!    chunk. A subject found in the chunk *before* the quote (where a pronoun in the
//!    quote can refer back to it: "He was born in Ulm") also excuses the statement's
//!    words that belong to the subject from rules 2 and 3.
//! 6. **A whole statement.** A statement whose last word is an article, a preposition
//!    or a conjunction ("The earthquake was caused by a.") was cut mid-phrase: whatever
//!    its words, it states nothing its quote can support. Seen on real output when a
//!    grammar held a small model to its sentence's words and it stopped early.
//! 7. **No stutter.** A content word the statement repeats more than twice beyond the
//!    times its quote has it ("Another Another Another …") is a generation loop, not a
//!    restatement: every word is the quote's, and it says nothing.
//!
//! Text is compared after the gate's one normalisation (NFC, whitespace runs collapsed),
//! then Unicode lowercasing and diacritics removed; words are maximal runs of letters and digits, with an
//! apostrophe inside a word kept ("n't" and "'s" are split off), and a hyphen splitting
//! words ("Hong Kong-based" is three words); single letters (initials) are not words.
//!
//! This is a lexical check, measured on a labelled set of real Wikipedia summaries
//! (`tests/gate/support.json`; the figures are in BENCHMARKS.md). It cannot tell "won"
//! from "lost" when both are absent from the quote's wording in the same way, and it
//! rejects a faithful paraphrase that uses synonyms for most of its words; a seam for a
//! second opinion ([`SupportOpinion`]) can only reject more, never accept what this
//! check rejected.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use crate::normalize::{collapse_cow, lower};
use crate::text::{excerpt, figures_not_in};

/// The default share of the statement's ordinary content words that must be in the quote.
pub const DEFAULT_MIN_SHARE: f64 = 0.75;

/// Settings of the `supported` check beyond `enabled` and `severity`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SupportSettings {
    /// At least this share (0 < share ≤ 1) of the statement's ordinary content words must
    /// be found in the quote. Names and figures are always all required.
    pub min_share: f64,
}

impl Default for SupportSettings {
    fn default() -> Self {
        SupportSettings {
            min_share: DEFAULT_MIN_SHARE,
        }
    }
}

/// A second opinion on whether a quote supports a statement (an NLI model in process, a
/// rule set of a user's own). Consulted only for claims the lexical check accepted, so it
/// can reject more and never accept what the lexical check rejected. None is configured
/// by default. A judge *model* does not belong here — the gate does no IO; it would run
/// after the gate, in the worker, with its own failure classes.
pub trait SupportOpinion: fmt::Debug + Send + Sync {
    /// `Some(detail)` when the statement is not supported by the quote.
    fn unsupported(&self, statement: &str, quote: &str) -> Option<String>;
}

/// Function words: they carry no fact a quote must support.
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "among",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "came",
    "come",
    "comes",
    "lasted",
    "lasting",
    "took",
    "take",
    "taken",
    "takes",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "either",
    "especially",
    "etc",
    "every",
    "ever",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "however",
    "i",
    "if",
    "in",
    "including",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "known",
    "may",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "my",
    "now",
    "of",
    "off",
    "on",
    "once",
    "one",
    "only",
    "onto",
    "or",
    "other",
    "our",
    "ours",
    "out",
    "over",
    "own",
    "per",
    "same",
    "she",
    "should",
    "since",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "thus",
    "to",
    "too",
    "under",
    "until",
    "up",
    "upon",
    "us",
    "very",
    "via",
    "was",
    "we",
    "well",
    "were",
    "what",
    "when",
    "where",
    "whereas",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "within",
    "would",
    "yet",
    "you",
    "your",
    "s",
    "shall",
    // What "can't", "won't" and "shan't" leave once "n't" is split off.
    "ca",
    "wo",
    "sha",
];

/// Irregular past forms and their base, so that "won" meets "winner" and "wrote" meets
/// "writer" (both compared by the base's stem).
const IRREGULAR: &[(&str, &str)] = &[
    ("won", "win"),
    ("led", "lead"),
    ("wrote", "write"),
    ("written", "write"),
    ("built", "build"),
    ("began", "begin"),
    ("begun", "begin"),
    ("fought", "fight"),
    ("held", "hold"),
    ("knew", "know"),
    ("left", "leave"),
    ("lost", "lose"),
    ("made", "make"),
    ("met", "meet"),
    ("paid", "pay"),
    ("ran", "run"),
    ("rose", "rise"),
    ("risen", "rise"),
    ("said", "say"),
    ("saw", "see"),
    ("seen", "see"),
    ("sold", "sell"),
    ("sent", "send"),
    ("spoke", "speak"),
    ("spoken", "speak"),
    ("spent", "spend"),
    ("stood", "stand"),
    ("struck", "strike"),
    ("taught", "teach"),
    ("told", "tell"),
    ("thought", "think"),
    ("wore", "wear"),
    ("worn", "wear"),
    ("bore", "bear"),
    ("born", "bear"),
    ("drew", "draw"),
    ("drawn", "draw"),
    ("drove", "drive"),
    ("driven", "drive"),
    ("fell", "fall"),
    ("fallen", "fall"),
    ("flew", "fly"),
    ("flown", "fly"),
    ("gave", "give"),
    ("given", "give"),
    ("grew", "grow"),
    ("grown", "grow"),
    ("kept", "keep"),
    ("sang", "sing"),
    ("sung", "sing"),
    ("shot", "shoot"),
    ("swam", "swim"),
    ("threw", "throw"),
    ("thrown", "throw"),
    ("chose", "choose"),
    ("chosen", "choose"),
    ("broke", "break"),
    ("broken", "break"),
    ("brought", "bring"),
    ("bought", "buy"),
    ("caught", "catch"),
    ("fed", "feed"),
    ("felt", "feel"),
    ("fled", "flee"),
    ("forgot", "forget"),
    ("froze", "freeze"),
    ("hid", "hide"),
    ("hidden", "hide"),
    ("meant", "mean"),
    ("rode", "ride"),
    ("ridden", "ride"),
    ("sought", "seek"),
    ("shook", "shake"),
    ("stole", "steal"),
    ("stolen", "steal"),
    ("swore", "swear"),
    ("tore", "tear"),
    ("torn", "tear"),
    ("understood", "understand"),
    ("wove", "weave"),
    ("woven", "weave"),
    ("withdrew", "withdraw"),
    ("oversaw", "oversee"),
    ("undertook", "undertake"),
    ("underwent", "undergo"),
    ("overthrew", "overthrow"),
    ("slew", "slay"),
];

/// Verbs whose agent nouns ("winner", "leader", "founder", "writer", "ruler") mean the
/// verb's doer: the noun is compared by the verb's stem, so "won" meets "winner".
const AGENT_VERBS: &[&str] = &[
    "win",
    "lead",
    "found",
    "write",
    "rule",
    "build",
    "create",
    "design",
    "direct",
    "produce",
    "compose",
    "paint",
    "teach",
    "play",
    "sing",
    "own",
    "manufacture",
    "invent",
    "discover",
    "publish",
    "edit",
    "command",
    "govern",
    "explore",
    "settle",
    "conquer",
    "develop",
    "perform",
    "support",
    "promote",
    "organize",
    "organise",
    "reform",
    "practice",
    "preach",
    "speak",
    "report",
    "photograph",
    "research",
    "collect",
];

/// Whether `l` is a verb form a statement cannot swap for another: an irregular past, a
/// lexicon verb's `-s`, `-ed` or `-ing` form, or any other word of six letters or more in
/// `-ed` or `-ing` ("reviewed", "hastening").
fn verb_form(l: &str) -> bool {
    crate::clause::inflected_verb(l)
        || (l.len() >= 6
            && (l.ends_with("ed") || l.ends_with("ing"))
            && !crate::clause::not_past(l))
}

/// The base a word is compared by when it is an irregular form or an agent noun of a
/// verb above; `None` otherwise.
fn base_of(l: &str) -> Option<&'static str> {
    if let Some((_, b)) = IRREGULAR.iter().find(|(form, _)| *form == l) {
        return Some(b);
    }
    let noun = l.strip_suffix('s').unwrap_or(l);
    let stem = noun
        .strip_suffix("er")
        .or_else(|| noun.strip_suffix("or"))
        .filter(|b| b.len() >= 3)?;
    let undoubled = (stem.len() > 3
        && stem.as_bytes()[stem.len() - 1] == stem.as_bytes()[stem.len() - 2])
        .then(|| &stem[..stem.len() - 1]);
    [Some(stem), undoubled, Some(&noun[..noun.len() - 1])]
        .into_iter()
        .flatten()
        .find_map(|b| AGENT_VERBS.iter().copied().find(|v| *v == b))
}

/// Words that say the same thing in encyclopedic prose, each compared as the word after
/// it: a paraphrase may use either ("established in 1209" for "founded in 1209").
const SYNONYMS: &[(&str, &str)] = &[
    ("established", "founded"),
    ("establish", "found"),
    ("establishes", "founds"),
    // Verbs of place and role say no more than "is": "lies west of" is "is west of".
    ("located", "is"),
    ("situated", "is"),
    ("lies", "is"),
    ("lie", "is"),
    ("lay", "is"),
    ("lying", "is"),
    ("sits", "is"),
    ("stands", "is"),
    ("stand", "is"),
    ("serves", "is"),
    ("serve", "is"),
    ("served", "is"),
    ("acts", "is"),
    ("started", "began"),
    ("start", "begin"),
    ("starts", "begins"),
    ("commenced", "began"),
    ("happened", "occurred"),
    ("happen", "occur"),
    ("happens", "occurs"),
    ("elected", "voted"),
    ("chosen", "voted"),
    ("transformed", "converted"),
    ("turned", "converted"),
    ("biggest", "largest"),
    ("big", "large"),
    ("huge", "large"),
    ("approximately", "about"),
    ("roughly", "about"),
    ("around", "about"),
    ("nearly", "about"),
    ("almost", "about"),
    ("c", "about"),
    ("ca", "about"),
    ("circa", "about"),
    ("gradually", "slowly"),
    ("rapidly", "quickly"),
    ("fast", "quickly"),
    ("exhibited", "shown"),
    ("displayed", "shown"),
    ("worldwide", "world"),
    ("global", "world"),
    ("globally", "world"),
    ("commonly", "often"),
    ("frequently", "often"),
    ("usually", "often"),
    ("famous", "known"),
    ("renowned", "known"),
    ("noted", "known"),
    ("called", "known"),
    ("titled", "known"),
    ("named", "known"),
    ("dubbed", "known"),
    ("nicknamed", "known"),
    ("termed", "known"),
    ("issued", "released"),
    ("auctioned", "sold"),
    ("prior", "before"),
    ("enhance", "improve"),
    ("enhances", "improves"),
    ("enhanced", "improved"),
];

/// The word a synonym is compared as; `None` for a word without one.
fn synonym_of(l: &str) -> Option<&'static str> {
    SYNONYMS.iter().find(|(w, _)| *w == l).map(|(_, to)| *to)
}

/// Words that set a direction, a rank or an order: a statement with one its source lacks
/// says another thing ("north" for "south", "least" for "most", "largest" for
/// "smallest"). Compared as written, lowercased.
const CONTRAST: &[&str] = &[
    "north",
    "south",
    "east",
    "west",
    "northeast",
    "northwest",
    "southeast",
    "southwest",
    "northern",
    "southern",
    "eastern",
    "western",
    "northward",
    "southward",
    "eastward",
    "westward",
    "northeastern",
    "northwestern",
    "southeastern",
    "southwestern",
    "upper",
    "lower",
    "inner",
    "outer",
    "largest",
    "smallest",
    "biggest",
    "highest",
    "lowest",
    "longest",
    "shortest",
    "oldest",
    "youngest",
    "earliest",
    "latest",
    "first",
    "last",
    "best",
    "worst",
    "greatest",
    "least",
    "most",
    "fewest",
    "more",
    "less",
    "fewer",
    "greater",
    "larger",
    "smaller",
    "higher",
    "older",
    "younger",
    "earlier",
    "later",
    "before",
    "after",
    "minimum",
    "maximum",
    "only",
    "second",
    "third",
    "fourth",
    "fifth",
    "top",
    "bottom",
    "above",
    "below",
    "inside",
    "outside",
    "within",
    "beyond",
];

/// Contrast words that place what comes before them: in a statement they must follow the
/// same word as in the quote ("adherents outside" is not "adherents within").
const PLACING: &[&str] = &[
    "outside",
    "inside",
    "within",
    "beyond",
    "above",
    "below",
    "before",
    "after",
    "north",
    "south",
    "east",
    "west",
    "northeast",
    "northwest",
    "southeast",
    "southwest",
];

/// The first contrast word of `statement` that neither `quote` nor `context` has, or that
/// places a word the quote places otherwise.
fn contrast_missing(statement: &str, quote: &str, context: &[String]) -> Option<String> {
    let words_of =
        |t: &str| -> Vec<String> { raw_words(t).into_iter().map(|(_, w)| lower(w)).collect() };
    let quote_words = words_of(quote);
    let mut pool = quote_words.clone();
    for c in context {
        pool.extend(words_of(c));
    }
    let same = |w: &str, p: &str| {
        p == w || synonym_of(w).is_some_and(|s| s == p) || synonym_of(p).is_some_and(|s| s == w)
    };
    let statement_words = words_of(statement);
    statement_words.iter().enumerate().find_map(|(k, w)| {
        if !CONTRAST.contains(&w.as_str()) {
            return None;
        }
        if !pool.iter().any(|p| same(w, p)) {
            return Some(w.clone());
        }
        // "110 million adherents outside": the word placed must be placed so in the quote
        // when the quote has it at all.
        let prev = k.checked_sub(1).map(|p| statement_words[p].as_str())?;
        let placing = PLACING.contains(&w.as_str()) && !stopword(prev) && prev.len() > 2;
        let quote_places_prev = quote_words
            .windows(2)
            .filter(|q| q[0] == prev)
            .collect::<Vec<_>>();
        (placing
            && !quote_places_prev.is_empty()
            && !quote_places_prev.iter().any(|q| same(w, &q[1])))
        .then(|| format!("{prev} {w}"))
    })
}

/// Words that negate what follows them.
const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "never",
    "none",
    "nobody",
    "nothing",
    "neither",
    "nor",
    "nowhere",
    "without",
    "cannot",
    "lacks",
    "lacked",
    "lacking",
    "wrongly",
    "falsely",
    "mistakenly",
    "erroneously",
];

/// A small multiplicative hasher for the per-response word tables: their keys are words
/// of the response and its chunk, hashed thousands of times per response, where SipHash's
/// resistance to chosen collisions buys nothing (a response is bounded at 64 KiB).
#[derive(Debug, Default, Clone, Copy)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word))
                .wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type Fx = BuildHasherDefault<FxHasher>;

/// Numbers written as words: figures like digits are, so each must be in the quote
/// ("four" does not support "five"): two to twenty ([`crate::text::SPELLED`]; "one" is left
/// out: it is mostly a pronoun, "one of the") and these.
const LARGER_NUMBER_WORDS: &[&str] = &[
    "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "thousand",
    "million", "billion", "trillion", "dozen", "half", "twice",
];

/// The shortest stem prefix two different words may share and count as the same word.
const MIN_SHARED_PREFIX: usize = 5;

/// One word of a text, as compared.
#[derive(Debug, Clone)]
struct Word {
    /// Lowercased.
    lower: Rc<str>,
    /// Snowball stem of `lower`.
    stem: Rc<str>,
    /// Written with an uppercase first letter (a name, or the first word of a sentence).
    capitalised: bool,
    /// Only digits, or a number word (a figure: judged by rule 1).
    numeric: bool,
    /// An inflected form of a verb (a past form, or a lexicon verb's `-s`, `-ed` or `-ing`
    /// form): judged by rule 9.
    verb: bool,
}

/// The words of a text and how many negations it holds.
#[derive(Debug, Default)]
struct Words {
    words: Vec<Word>,
    negations: usize,
    /// Where each negation stands: the index in `words` of the word after it.
    negation_at: Vec<usize>,
}

fn stopword(w: &str) -> bool {
    static SET: std::sync::LazyLock<HashSet<&'static str>> =
        std::sync::LazyLock::new(|| STOPWORDS.iter().copied().collect());
    SET.contains(w)
}

/// Words no English statement ends on: articles, prepositions and conjunctions that
/// need something after them. Deliberately short: a word that can end a clause ("up",
/// "in" as in "moved in", "that" as in "he said that") is not here.
const DANGLING_ENDS: &[&str] = &[
    "most",
    "least",
    "a",
    "an",
    "the",
    "of",
    "by",
    "at",
    "to",
    "for",
    "from",
    "with",
    "and",
    "or",
    "but",
    "nor",
    "into",
    "onto",
    "than",
    "between",
    "among",
    "whose",
    "its",
    "their",
    "his",
    "her",
    "our",
    "my",
    "your",
    "during",
    "including",
    "such",
];

/// The statement's last word when it cannot end a statement.
pub(crate) fn dangling_end(statement: &str) -> Option<&str> {
    let (_, last) = raw_words(statement).pop()?;
    DANGLING_ENDS
        .iter()
        .any(|d| d.eq_ignore_ascii_case(last))
        .then_some(last)
}

/// The first statement word repeated more than twice beyond its count in the quote, with
/// both counts.
fn stutter<'w>(statement: &'w [Word], quote: &[Word]) -> Option<(&'w str, usize, usize)> {
    statement.iter().find_map(|w| {
        let times = statement.iter().filter(|s| s.lower == w.lower).count();
        let in_quote = quote.iter().filter(|q| q.lower == w.lower).count();
        (times > in_quote + 2).then_some((&*w.lower, times, in_quote))
    })
}

fn negation(w: &str) -> bool {
    NEGATIONS.contains(&w)
}

fn number_word(w: &str) -> bool {
    static SET: std::sync::LazyLock<HashSet<&'static str>> = std::sync::LazyLock::new(|| {
        crate::text::SPELLED[2..]
            .iter()
            .chain(LARGER_NUMBER_WORDS)
            .copied()
            .collect()
    });
    SET.contains(w)
}

/// The raw words of a text with their byte offsets: runs of letters and digits, an
/// apostrophe kept between two of them. Whitespace needs no normalising here: it only
/// separates words.
fn raw_words(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    let mut it = text.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        let inner_apostrophe = matches!(c, '\'' | '\u{2019}')
            && start.is_some()
            && it.peek().is_some_and(|(_, n)| n.is_alphanumeric());
        // A combining mark continues its word: text in NFD is not split inside "é".
        let mark = || start.is_some() && !c.is_ascii() && is_combining_mark(c);
        if c.is_alphanumeric() || inner_apostrophe || mark() {
            start.get_or_insert(i);
        } else if let Some(s) = start.take() {
            out.push((s, &text[s..i]));
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..]));
    }
    out
}

/// What one raw word of a text is, decided once per response and spelling.
#[derive(Debug, Clone)]
struct Token {
    /// Lowercased, folded, with `n't` and `'s` split off.
    lower: Rc<str>,
    /// Ends in `n't`.
    negated: bool,
    /// A negation word ("not", "never", …).
    negation: bool,
    /// The word as compared (stem, figure, verb), unless it is a function word, an
    /// initial or empty.
    word: Option<(Rc<str>, bool, bool)>,
}

fn token(stemmer: &Stemmer, w: &str) -> Token {
    let mut negated = false;
    let l = if w.bytes().all(|b| b.is_ascii_alphanumeric()) {
        w.to_ascii_lowercase()
    } else {
        let l = lower(w).replace('\u{2019}', "'");
        let l = if let Some(base) = l.strip_suffix("n't") {
            negated = true;
            base
        } else {
            l.strip_suffix("'s").unwrap_or(&l)
        };
        // Canonical decomposition with marks dropped also makes NFC and NFD spellings of
        // a word equal, so the text needs no NFC pass of its own.
        fold(&l.replace('\'', ""))
    };
    let negation = negation(&l);
    // A single letter is an initial ("C. V. Raman") or a split-off remnant, not a word a
    // quote must repeat.
    let single_letter = l.chars().count() == 1 && !l.starts_with(|c: char| c.is_ascii_digit());
    // A synonym is compared as the word it stands for, and is a function word when that is.
    let canon = synonym_of(&l).unwrap_or(&l);
    let function = stopword(&l) || stopword(canon);
    let word = (!negation && !l.is_empty() && !single_letter && !function).then(|| {
        let numeric = l.chars().all(|c| c.is_ascii_digit()) || number_word(&l);
        let stem = stemmer.stem(base_of(canon).unwrap_or(canon)).into_owned();
        let verb = !numeric && verb_form(&l);
        (Rc::from(stem), numeric, verb)
    });
    Token {
        lower: Rc::from(l),
        negated,
        negation,
        word,
    }
}

/// The words of `text` with each kept word's byte offset, tokens looked up in `tokens`.
fn split_words_at(tokens: &dyn Fn(&str) -> Token, text: &str) -> (Words, Vec<usize>) {
    let mut out = Words::default();
    let mut offsets = Vec::new();
    let mut prev_not = false;
    let mut prev_to = false;
    for (at, w) in raw_words(text) {
        let t = tokens(w);
        // A base form after "to" is an infinitive: a verb ("to induce ovulation").
        let infinitive = std::mem::replace(&mut prev_to, &*t.lower == "to")
            && crate::clause::base_verb(&t.lower);
        if t.negated {
            out.negations += 1;
            out.negation_at.push(out.words.len());
        }
        if &*t.lower == "only" && prev_not {
            // "not only … but also" affirms: that "not" was no negation.
            out.negations -= 1;
            out.negation_at.pop();
        }
        prev_not = &*t.lower == "not";
        if t.negation {
            out.negations += 1;
            out.negation_at.push(out.words.len());
            continue;
        }
        let Some((stem, numeric, verb)) = t.word else {
            continue;
        };
        out.words.push(Word {
            lower: t.lower,
            stem,
            capitalised: w.chars().next().is_some_and(char::is_uppercase),
            numeric,
            verb: verb || (infinitive && !numeric),
        });
        offsets.push(at);
    }
    (out, offsets)
}

/// Diacritics removed (canonical decomposition, combining marks dropped), so that
/// "Montreal" in a statement meets "Montréal" in its quote.
fn fold(word: &str) -> String {
    if word.is_ascii() {
        return word.to_owned();
    }
    word.nfd().filter(|c| !is_combining_mark(*c)).collect()
}

/// Whether `w` is among `pool`: the same lowercased word, the same stem, or a shared stem
/// prefix of at least [`MIN_SHARED_PREFIX`] letters.
fn found(w: &Word, pool: &[Word]) -> bool {
    pool.iter()
        .any(|p| p.lower == w.lower || p.stem == w.stem || shared_prefix(&p.stem, &w.stem))
}

fn shared_prefix(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short.len() >= MIN_SHARED_PREFIX
        && short.chars().count() >= MIN_SHARED_PREFIX
        && long.starts_with(short)
}

/// The words of a quote, indexed: [`found`] with hash look-ups first, the prefix scan only
/// for a word neither look-up finds (rare in a supported statement).
struct Pool<'w> {
    words: &'w [Word],
    lowers: HashSet<&'w str, Fx>,
    stems: HashSet<&'w str, Fx>,
}

impl<'w> Pool<'w> {
    fn new(words: &'w [Word]) -> Self {
        Pool {
            words,
            lowers: words.iter().map(|w| &*w.lower).collect(),
            stems: words.iter().map(|w| &*w.stem).collect(),
        }
    }

    fn has(&self, w: &Word) -> bool {
        self.lowers.contains(&*w.lower)
            || self.stems.contains(&*w.stem)
            || (w.stem.len() >= MIN_SHARED_PREFIX
                && self.words.iter().any(|p| shared_prefix(&p.stem, &w.stem)))
    }
}

/// The support check for one response: the stemmer, and the chunk's words, split once
/// (on first need) for every claim of the response.
pub(crate) struct Support {
    settings: SupportSettings,
    stemmer: Stemmer,
    /// Words already classified and stemmed for this response: the same words recur in
    /// every claim.
    tokens: RefCell<HashMap<Box<str>, Token, Fx>>,
}

impl fmt::Debug for Support {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Support")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Support {
    pub(crate) fn new(settings: SupportSettings) -> Self {
        Support {
            settings,
            stemmer: Stemmer::create(Algorithm::English),
            tokens: RefCell::new(HashMap::default()),
        }
    }

    fn token(&self, raw: &str) -> Token {
        if let Some(t) = self.tokens.borrow().get(raw) {
            return t.clone();
        }
        let t = token(&self.stemmer, raw);
        self.tokens.borrow_mut().insert(raw.into(), t.clone());
        t
    }

    fn words(&self, text: &str) -> Words {
        split_words_at(&|w| self.token(w), text).0
    }

    /// Whether `phrase` (a statement's opening noun phrase) names `subject`: every content
    /// word of the subject is in it, or the subject's last content word is and the subject
    /// is the first of the chunk's `names` to end in that word — a surname or a name's head
    /// standing for the name the chunk gave first ("Curie" for "Marie Curie" when she is
    /// named before "Pierre Curie"). "film" is not named by "The Academy Awards". Words
    /// are compared by their lowercased form or stem, never by a shared prefix.
    pub(crate) fn names_subject(&self, subject: &str, phrase: &str, names: &[String]) -> bool {
        let subject_words = self.words(subject);
        let phrase_words = self.words(phrase);
        if subject_words.words.is_empty() {
            return lower(&collapse_cow(phrase)).contains(&lower(&collapse_cow(subject)));
        }
        if subject_words
            .words
            .iter()
            .all(|w| found_exact(w, &phrase_words.words))
        {
            return true;
        }
        let head = &subject_words.words[subject_words.words.len() - 1];
        // The head stands for the subject as a name ("Curie") or alone ("the music"); after
        // a modifier the subject lacks it is another thing ("electronic music" is not
        // "20th-century classical music").
        let stands_for = |i: usize| {
            let w = &phrase_words.words[i];
            w.lower == head.lower
                && (w.capitalised
                    || i == 0
                    || found_exact(&phrase_words.words[i - 1], &subject_words.words))
        };
        if !(0..phrase_words.words.len()).any(stands_for) {
            return false;
        }
        let first = names.iter().find(|n| {
            self.words(n)
                .words
                .last()
                .is_some_and(|w| w.lower == head.lower)
        });
        first.is_none_or(|n| lower(&collapse_cow(n)) == lower(&collapse_cow(subject)))
    }

    /// Whether `text` has a content word (not only function words).
    pub(crate) fn has_content(&self, text: &str) -> bool {
        !self.words(text).words.is_empty()
    }

    /// Whether `text` mentions `subject`: every content word of it, compared by lowercased
    /// form or stem.
    pub(crate) fn mentions(&self, subject: &str, text: &str) -> bool {
        let subject_words = self.words(subject);
        let text_words = self.words(text);
        !subject_words.words.is_empty()
            && subject_words
                .words
                .iter()
                .all(|w| found_exact(w, &text_words.words))
    }
}

/// The statement and source of one claim, as the check sees them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClaimText<'a> {
    pub statement: &'a str,
    /// The source: the quote found in the chunk, or the sentence a handle names.
    pub quote: &'a str,
    /// When the source opens with a reference back ("It was designed …"), the subjects of
    /// the sentences it refers to, nearest first; empty otherwise.
    pub context: &'a [String],
    /// The source's own subject refers back ("It is bordered by …") and the statement's
    /// does not: the statement must then name what the source's subject stands for
    /// (rule 8).
    pub referent_required: bool,
}

impl Support {
    /// Why the source does not support the statement (`Err`), or `Ok` with how far back
    /// into the context the statement's words were found (`Some(k)`: up to phrase `k`;
    /// `None`: the source alone supports it).
    pub(crate) fn unsupported(&self, claim: ClaimText<'_>) -> Result<Option<usize>, String> {
        let statement = self.words(claim.statement);
        let quote = self.words(claim.quote);
        let context = Referents::new(claim.context.iter().map(|c| self.words(c)).collect());
        damaged(claim.statement, &statement, &quote)?;
        figures_missing(claim, &context)?;
        one_sided_negation(&statement, &quote)?;
        numbers_missing(&statement, &quote, &context)?;
        self.words_missing(claim, &statement, &quote, &context)?;
        // 12. A near copy with one content word swapped ("seven are core electrons" for
        // "seven are valence electrons").
        if let Some((said, was)) = swapped_word(&statement.words, &quote.words) {
            return Err(format!(
                "the statement copies its quote with {} in place of {}",
                excerpt(&said, 24),
                excerpt(&was, 24)
            ));
        }
        // 13. A name its quote gives as doing something, made the one it is done to.
        if let Some(detail) = voice_flipped(claim.statement, claim.quote) {
            return Err(detail);
        }
        referent_unnamed(claim, &statement, &context)?;
        Ok(context.used.get())
    }

    /// Rules 2, 9, 10 and 3: names, verbs and words of direction or rank, all required;
    /// other content words, by share.
    fn words_missing(
        &self,
        claim: ClaimText<'_>,
        statement: &Words,
        quote: &Words,
        context: &Referents,
    ) -> Result<(), String> {
        let missing = Missing::tally(statement, &Pool::new(&quote.words), context);
        if !missing.names.is_empty() {
            let whence = if claim.context.is_empty() {
                ""
            } else {
                " nor in the subject it refers back to"
            };
            return Err(format!(
                "name(s) in the statement not in the quote{whence}: {}",
                listed(&missing.names)
            ));
        }
        // 9. Verbs, all required: the verb is the relation ("designed", "destroyed").
        if !missing.verbs.is_empty() {
            return Err(format!(
                "verb(s) in the statement not in the quote: {}",
                listed(&missing.verbs)
            ));
        }
        // 10. Words that set a direction or a rank ("north", "largest", "least"), all
        // required: one of them swapped is another fact.
        if let Some(w) = contrast_missing(claim.statement, claim.quote, claim.context) {
            return Err(format!(
                "{} in the statement is not in the quote",
                excerpt(&w, 24)
            ));
        }
        let ordinary = missing.ordinary_total;
        if ordinary > 0 {
            let share = (ordinary - missing.ordinary.len()) as f64 / ordinary as f64;
            if share < self.settings.min_share {
                return Err(format!(
                    "statement words not in the quote: {} ({} of {} found; {:.0}% required)",
                    listed(&missing.ordinary),
                    ordinary - missing.ordinary.len(),
                    ordinary,
                    self.settings.min_share * 100.0
                ));
            }
        }
        Ok(())
    }
}

/// The subjects of the sentences a source refers back to, nearest first, and how far back
/// into them the statement's words were found.
struct Referents {
    phrases: Vec<Words>,
    used: std::cell::Cell<Option<usize>>,
}

impl Referents {
    fn new(phrases: Vec<Words>) -> Self {
        Referents {
            phrases,
            used: std::cell::Cell::new(None),
        }
    }

    /// The statement drew on the context up to phrase `k`.
    fn note(&self, k: usize) {
        self.used.set(Some(self.used.get().map_or(k, |u| u.max(k))));
    }

    /// A word missing from the source may be one of the referred-to subject's words.
    fn has(&self, w: &Word) -> bool {
        match self.phrases.iter().position(|c| found(w, &c.words)) {
            Some(k) => {
                self.note(k);
                true
            }
            None => false,
        }
    }
}

/// 6. A statement cut mid-phrase; 7. a word repeated in a loop.
fn damaged(text: &str, statement: &Words, quote: &Words) -> Result<(), String> {
    if let Some(last) = dangling_end(text) {
        return Err(format!(
            "the statement ends on {} and so is cut mid-phrase",
            excerpt(last, 24)
        ));
    }
    if let Some((word, times, in_quote)) = stutter(&statement.words, &quote.words) {
        return Err(format!(
            "the statement repeats {} {times} times, its quote {in_quote}",
            excerpt(word, 24)
        ));
    }
    Ok(())
}

/// 1. Figures: in the source, or in the subject it refers to.
fn figures_missing(claim: ClaimText<'_>, context: &Referents) -> Result<(), String> {
    if let Some(detail) = figures_not_in(claim.statement, claim.quote) {
        let with: String = std::iter::once(claim.quote)
            .chain(claim.context.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        if claim.context.is_empty() || figures_not_in(claim.statement, &with).is_some() {
            return Err(detail);
        }
        context.note(claim.context.len() - 1);
    }
    Ok(())
}

/// 4. Negation on one side only.
fn one_sided_negation(statement: &Words, quote: &Words) -> Result<(), String> {
    // A negation in the quote counts where the statement's words are drawn from (two
    // words either side of them): "… and is never found in nature" does not negate
    // "is almost always found with lanthanides" earlier in the same sentence.
    let drawn: Vec<usize> = statement
        .words
        .iter()
        .filter_map(|w| {
            quote
                .words
                .iter()
                .position(|q| q.lower == w.lower || q.stem == w.stem)
        })
        .collect();
    let quote_negated = match (drawn.iter().min(), drawn.iter().max()) {
        (Some(&lo), Some(&hi)) => quote
            .negation_at
            .iter()
            .any(|&at| at + 2 >= lo && at <= hi + 2),
        _ => quote.negations > 0,
    };
    if (statement.negations > 0) != quote_negated {
        let side = if statement.negations > 0 {
            "the statement is negated and its quote is not"
        } else {
            "the quote is negated and the statement is not"
        };
        return Err(side.to_owned());
    }
    Ok(())
}

/// 1b. Numbers written as words, all required.
fn numbers_missing(statement: &Words, quote: &Words, context: &Referents) -> Result<(), String> {
    let missing: Vec<&str> = statement
        .words
        .iter()
        .filter(|w| number_word(&w.lower))
        .filter(|w| !quote.words.iter().any(|q| q.lower == w.lower) && !context.has(w))
        .map(|w| &*w.lower)
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "number(s) in the statement not in the quote: {}",
            missing
                .iter()
                .map(|w| excerpt(w, 24))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(())
}

/// The statement's words (figures aside) found neither in the source nor in the context,
/// by kind.
struct Missing<'s> {
    names: Vec<&'s str>,
    verbs: Vec<&'s str>,
    ordinary: Vec<&'s str>,
    /// All the statement's ordinary content words, found or not.
    ordinary_total: usize,
}

impl<'s> Missing<'s> {
    fn tally(statement: &'s Words, pool: &Pool<'_>, context: &Referents) -> Self {
        let mut missing = Missing {
            names: Vec::new(),
            verbs: Vec::new(),
            ordinary: Vec::new(),
            ordinary_total: 0,
        };
        for w in statement.words.iter().filter(|w| !w.numeric) {
            let here = pool.has(w) || context.has(w);
            if w.capitalised {
                if !here {
                    missing.names.push(&w.lower);
                }
            } else if w.verb {
                if !here {
                    missing.verbs.push(&w.lower);
                }
            } else {
                missing.ordinary_total += 1;
                if !here {
                    missing.ordinary.push(&w.lower);
                }
            }
        }
        missing
    }
}

/// Up to six words, quoted, for a reason's detail.
fn listed(ws: &[&str]) -> String {
    ws.iter()
        .take(6)
        .map(|w| excerpt(w, 24))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rule 8, the referent: "It is bordered by Rajasthan …" does not make Rajasthan the
/// thing that is bordered.
fn referent_unnamed(
    claim: ClaimText<'_>,
    statement: &Words,
    context: &Referents,
) -> Result<(), String> {
    if claim.referent_required
        && !context.phrases.is_empty()
        && !statement
            .words
            .iter()
            .any(|w| !w.numeric && context.phrases.iter().any(|c| found_exact(w, &c.words)))
    {
        return Err(format!(
            "the quote's subject refers back and the statement does not name what it refers to ({})",
            excerpt(&claim.context.join("; "), 60)
        ));
    }
    Ok(())
}

/// In a statement that copies its quote (at least four of every five of its content words
/// in the quote's order), a content word standing where the quote has a different one,
/// between the same neighbours: `(statement's word, quote's word)`.
fn swapped_word(statement: &[Word], quote: &[Word]) -> Option<(String, String)> {
    let (n, m) = (statement.len(), quote.len());
    if n < 3 || m == 0 || n * m > 40_000 {
        return None;
    }
    let same = |a: &Word, b: &Word| a.lower == b.lower || a.stem == b.stem;
    // Longest common subsequence, by dynamic programming over the two word lists.
    let mut dp = vec![vec![0u16; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            dp[i][j] = if same(&statement[i], &quote[j]) {
                dp[i + 1][j + 1] + 1
            } else {
                dp[i + 1][j].max(dp[i][j + 1])
            };
        }
    }
    let aligned = dp[0][0] as usize;
    if aligned * 5 < n * 4 {
        return None;
    }
    // Walk the alignment; a gap of one statement word against one quote word between two
    // aligned words is a swap.
    let (mut i, mut j) = (0, 0);
    let mut anchored = false;
    while i < n && j < m {
        if same(&statement[i], &quote[j]) {
            i += 1;
            j += 1;
            anchored = true;
        } else if dp[i + 1][j] >= dp[i][j + 1] {
            // statement[i] unaligned: a swap when the quote also skips exactly one word here
            // and both sides meet again right after.
            let next_meets = i + 1 < n
                && j + 1 < m
                && same(&statement[i + 1], &quote[j + 1])
                && !same(&statement[i], &quote[j]);
            // Names are rule 2's: a name put for "the country" comes from the context.
            let ordinary = |w: &Word| !w.numeric && !w.capitalised;
            if anchored && next_meets && ordinary(&statement[i]) && ordinary(&quote[j]) {
                return Some((statement[i].lower.to_string(), quote[j].lower.to_string()));
            }
            i += 1;
        } else {
            j += 1;
        }
    }
    None
}

/// The passive a statement puts where its quote has the same name doing the same thing:
/// "David Bordwell was suggested they were …" from "… such as David Bordwell suggested
/// they were …" (the name's last word, then the verb, then what it did, with no auxiliary
/// or punctuation between). Every word is the quote's, so no other rule sees it; the name
/// has become what the verb is done to. A participle followed by a preposition is the
/// quote's own passive ("the Treaty of Paris signed in 1783", "the Mona Lisa painted by
/// Leonardo"), not an act. Seen on real output when a schema held a sentence's subject to
/// the names it contains.
fn voice_flipped(statement: &str, quote: &str) -> Option<String> {
    const AUXILIARIES: [&str; 4] = ["was", "were", "is", "are"];
    const PREPOSITIONS: [&str; 26] = [
        "by", "in", "on", "at", "for", "from", "with", "as", "during", "to", "into", "under",
        "after", "before", "between", "since", "until", "through", "over", "near", "within",
        "without", "across", "of", "around", "among",
    ];
    let bare = |t: &str| {
        t.trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    };
    // A word the text runs on from: no punctuation after it.
    let runs_on = |t: &str| t.ends_with(|c: char| c.is_alphanumeric());
    let quote: Vec<&str> = quote.split_whitespace().collect();
    let acts = |name: &str, verb: &str| {
        quote.windows(3).any(|q| {
            runs_on(q[0])
                && bare(q[0]) == name
                && runs_on(q[1])
                && bare(q[1]) == verb
                && !PREPOSITIONS.contains(&bare(q[2]).as_str())
        })
    };
    let undergoes = |name: &str, verb: &str| {
        quote.windows(3).any(|q| {
            bare(q[0]) == name && AUXILIARIES.contains(&bare(q[1]).as_str()) && bare(q[2]) == verb
        })
    };
    let tokens: Vec<&str> = statement.split_whitespace().collect();
    tokens.windows(3).find_map(|w| {
        let [name, aux, verb] = [w[0], w[1], w[2]];
        let named = runs_on(name) && name.starts_with(|c: char| c.is_uppercase());
        let (name, verb) = (bare(name), bare(verb));
        let passive = AUXILIARIES.contains(&aux.to_lowercase().as_str())
            && verb.len() > 3
            && verb.ends_with("ed")
            && w[2].starts_with(|c: char| c.is_lowercase());
        (named && passive && acts(&name, &verb) && !undergoes(&name, &verb)).then(|| {
            format!(
                "the statement says {} where its quote says {}: the name is the one doing it there",
                excerpt(&format!("{name} {} {verb}", aux.to_lowercase()), 60),
                excerpt(&format!("{name} {verb}"), 60)
            )
        })
    })
}

/// Whether `w` is among `pool` by its lowercased form or its stem (no shared prefix).
fn found_exact(w: &Word, pool: &[Word]) -> bool {
    pool.iter().any(|p| p.lower == w.lower || p.stem == w.stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check as the gate runs it: a quote that refers back is read with the subject
    /// when the chunk names it before the quote.
    fn judge(statement: &str, quote: &str, subject: &str, chunk: &str) -> Option<String> {
        let at = chunk.find(quote).expect("quote in chunk");
        let refers = crate::clause::read(quote).refers_back();
        let context: Vec<String> = (refers && chunk[..at].contains(subject))
            .then(|| subject.to_owned())
            .into_iter()
            .collect();
        Support::new(SupportSettings::default())
            .unsupported(ClaimText {
                statement,
                quote,
                context: &context,
                referent_required: false,
            })
            .err()
    }

    #[test]
    fn a_head_after_another_modifier_names_another_thing() {
        let support = Support::new(SupportSettings::default());
        let names = ["Marie Curie".to_owned(), "Pierre Curie".to_owned()];
        assert!(support.names_subject("Marie Curie", "Curie", &names));
        assert!(!support.names_subject("Pierre Curie", "Curie", &names));
        let names = ["20th-century classical music".to_owned()];
        assert!(support.names_subject("20th-century classical music", "The music", &names));
        assert!(!support.names_subject(
            "20th-century classical music",
            "Aleatory, atonality, serialism, musique concrète, and electronic music",
            &names
        ));
    }

    const CURIE: &str = "Marie Curie was a Polish and naturalised-French physicist and chemist. \
        She was the first woman to win a Nobel Prize. She won the prize in 1903 and again in 1911. \
        She was born in Warsaw.";

    #[test]
    fn faithful_statements_are_supported() {
        for (statement, quote) in [
            (
                "Marie Curie was a Polish physicist.",
                "Marie Curie was a Polish and naturalised-French physicist and chemist.",
            ),
            (
                "Curie was the first woman to win a Nobel Prize.",
                "She was the first woman to win a Nobel Prize.",
            ),
            (
                "Marie Curie won the prize in 1911.",
                "She won the prize in 1903 and again in 1911.",
            ),
            ("Marie Curie was born in Warsaw.", "She was born in Warsaw."),
        ] {
            assert_eq!(
                judge(statement, quote, "Marie Curie", CURIE),
                None,
                "{statement}"
            );
        }
    }

    #[test]
    fn each_rule_rejects_and_names_what_is_missing() {
        let q = "She was born in Warsaw.";
        let d = judge("Marie Curie was born in Paris.", q, "Marie Curie", CURIE).unwrap();
        assert!(d.contains("\"paris\""), "{d}");
        let d = judge(
            "Marie Curie was not born in Warsaw.",
            q,
            "Marie Curie",
            CURIE,
        )
        .unwrap();
        assert!(d.contains("negated"), "{d}");
        let q = "She won the prize in 1903 and again in 1911.";
        let d = judge(
            "Marie Curie won the prize in 1905.",
            q,
            "Marie Curie",
            CURIE,
        )
        .unwrap();
        assert!(d.contains("1905"), "{d}");
        let q = "Marie Curie was a Polish and naturalised-French physicist and chemist.";
        let d = judge(
            "Marie Curie taught mathematics at the university.",
            q,
            "Marie Curie",
            CURIE,
        )
        .unwrap();
        assert!(d.contains("\"taught\""), "{d}");
        let d = judge(
            "Pierre Curie was a Polish physicist.",
            q,
            "Pierre Curie",
            CURIE,
        )
        .unwrap();
        assert!(d.contains("\"pierre\""), "{d}");
    }

    #[test]
    fn a_name_made_the_object_of_its_own_verb_is_unsupported() {
        let chunk = "Action films favor spectacle. While some scholars such as David Bordwell \
                     suggested they were films that favor spectacle, others disagreed. The \
                     bridge was designed by Maria Lindqvist.";
        let q = "While some scholars such as David Bordwell suggested they were films that favor spectacle, others disagreed.";
        let d = judge(
            "David Bordwell was suggested they were films that favor spectacle.",
            q,
            "David Bordwell",
            chunk,
        )
        .expect("the passive flips who suggested");
        assert!(d.contains("\"bordwell was suggested\""), "{d}");
        // The active, as the quote has it, is supported.
        assert_eq!(
            judge(
                "David Bordwell suggested they were films that favor spectacle.",
                q,
                "David Bordwell",
                chunk
            ),
            None
        );
        // A passive the quote itself has is not flipped.
        let q = "The bridge was designed by Maria Lindqvist.";
        assert!(voice_flipped("The bridge was designed by Maria Lindqvist.", q).is_none());
        // Nor a participle the quote follows with a preposition: its own passive.
        for (statement, quote) in [
            (
                "The Treaty of Paris was signed in 1783.",
                "The Treaty of Paris signed in 1783 ended the war.",
            ),
            (
                "The Mona Lisa was painted by Leonardo.",
                "The Mona Lisa painted by Leonardo hangs in the Louvre.",
            ),
        ] {
            assert!(voice_flipped(statement, quote).is_none(), "{statement}");
        }
        // Nor is a name set off by a comma ("Bombay, called Mumbai since 1995").
        assert!(
            voice_flipped(
                "Bombay was called Mumbai.",
                "Bombay, called Mumbai since 1995, is a city."
            )
            .is_none()
        );
    }

    #[test]
    fn a_statement_cut_mid_phrase_is_unsupported() {
        let q = "She won the prize in 1903 and again in 1911.";
        let d = judge("Marie Curie won the.", q, "Marie Curie", CURIE).unwrap();
        assert!(d.contains("\"the\"") && d.contains("mid-phrase"), "{d}");
        let d = judge(
            "Marie Curie won the prize in 1903 and",
            q,
            "Marie Curie",
            CURIE,
        )
        .unwrap();
        assert!(d.contains("\"and\""), "{d}");
        assert_eq!(
            judge(
                "Marie Curie won the prize in 1903.",
                q,
                "Marie Curie",
                CURIE
            ),
            None
        );
    }

    #[test]
    fn a_word_repeated_in_a_loop_is_unsupported() {
        let q = "She won the prize in 1903 and again in 1911.";
        let looped = "Marie Curie won won won won the prize.";
        let d = judge(looped, q, "Marie Curie", CURIE).unwrap();
        assert!(d.contains("\"won\" 4 times, its quote 1"), "{d}");
        assert_eq!(
            judge(
                "Marie Curie won the prize, won it again.",
                q,
                "Marie Curie",
                CURIE
            ),
            None,
            "a word twice is a sentence, not a loop"
        );
    }

    #[test]
    fn numbers_in_words_are_figures() {
        let chunk = "The leopard is one of the five extant cat species in the genus Panthera.";
        let d = judge(
            "The leopard is one of the four extant cat species.",
            chunk,
            "The leopard",
            chunk,
        )
        .unwrap();
        assert!(d.contains("\"four\""), "{d}");
        assert_eq!(
            judge(
                "The leopard is one of five extant cat species.",
                chunk,
                "The leopard",
                chunk
            ),
            None
        );
        // Initials are not words a quote must repeat.
        let chunk = "Chandrasekhara Venkata Raman was an Indian physicist.";
        assert_eq!(
            judge(
                "C. V. Raman was an Indian physicist.",
                chunk,
                "C. V. Raman",
                chunk
            ),
            None
        );
    }

    #[test]
    fn a_subject_after_the_quote_excuses_nothing() {
        let chunk = "He was born in Ulm. Albert Einstein was a physicist.";
        let d = judge(
            "Albert Einstein was born in Ulm.",
            "He was born in Ulm.",
            "Albert Einstein",
            chunk,
        )
        .unwrap();
        assert!(d.contains("albert"), "{d}");
        let d = judge(
            "Isaac Newton was born in Ulm.",
            "He was born in Ulm.",
            "Isaac Newton",
            chunk,
        )
        .unwrap();
        assert!(d.contains("isaac"), "{d}");
    }

    #[test]
    fn negation_forms() {
        let chunk = "Paris is not only the capital but also the largest city. Rome isn't small.";
        assert_eq!(
            judge(
                "Paris is the capital and largest city.",
                "Paris is not only the capital but also the largest city.",
                "Paris",
                chunk
            ),
            None
        );
        assert!(judge("Rome is small city.", "Rome isn't small.", "Rome", chunk).is_some());
        assert_eq!(
            judge(
                "Rome is not small at all.",
                "Rome isn't small.",
                "Rome",
                chunk
            ),
            None
        );
        let chunk = "Penguins cannot fly.";
        assert_eq!(
            judge("Penguins can't fly at all.", chunk, "Penguins", chunk),
            None
        );
        assert_eq!(
            judge("Penguins won't fly at all.", chunk, "Penguins", chunk),
            None
        );
    }

    #[test]
    fn words_split_on_hyphens_and_keep_inner_apostrophes() {
        let words: Vec<&str> = raw_words("Hong Kong-based O'Neil's 'quoted'")
            .into_iter()
            .map(|(_, w)| w)
            .collect();
        assert_eq!(words, ["Hong", "Kong", "based", "O'Neil's", "quoted"]);
    }
}
