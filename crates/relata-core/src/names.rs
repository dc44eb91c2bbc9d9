//! The names a chunk gives: what a schema may offer as a claim's subject and an entity's
//! name.
//!
//! Deterministic and plain (no regular expression, no model): a name is a run of
//! capitalised words ("Georges Seurat", "Academy of Motion Picture Arts and Sciences",
//! "HAL 9000"), joined across the lowercase connectors names contain ("of", "the", "and",
//! "de", "von", …) but never starting or ending with one, nor across a sentence's end; a
//! possessive `'s` is left off ("Seurat's" gives "Seurat"); a run of two names joined by
//! "and" ("Keir Dullea and Gary Lockwood") also gives each name alone, unless the first
//! holds an "of" ("Academy of Motion Picture Arts and Sciences" is one name); where the
//! second is one adjective of a people or place that qualifies the lowercase word after
//! the run ("the Great Depression and Mexican muralists"), only the first is a name. A
//! title the text quotes is one name, small words and all ("Encounter in the Dawn"). A
//! capitalised word that only opens a sentence
//! is a name when it is not one of the words sentences commonly open with ("The", "It",
//! "In", "However", …, or an adverb in "-ly" or a participle in "-ed"): "Electrons are
//! …" names electrons, "Filmed in Paris, …" names nothing. The document's title counts
//! when the chunk contains it (as written, or with its first letter's case changed: a
//! concept article opens "Chamber music is …"), without a trailing disambiguation
//! ("Casablanca (film)" gives "Casablanca").
//!
//! Every name returned is the chunk's own text, so a schema that offers only these holds
//! a model to words the chunk contains; the gate still checks every name it is sent.
//! A splitter mistake costs a candidate (recall), never safety: nothing here decides
//! what is stored.

/// The most names one chunk offers; a schema's enum stays small enough for every
/// grammar compiler and every name is a choice a small model can read.
pub const MAX_NAMES: usize = 40;
/// The longest name offered, in characters.
pub const MAX_NAME_CHARS: usize = 80;

/// Lowercase words that join the capitalised words of one name.
const CONNECTORS: &[&str] = &[
    "of", "the", "and", "de", "la", "le", "les", "du", "des", "del", "della", "di", "da", "dos",
    "das", "von", "van", "der", "den", "y", "on", "for", "&", "al", "bin", "ibn",
];

/// Capitalised words a sentence commonly opens with that name nothing alone.
const OPENERS: &[&str] = &[
    "A",
    "An",
    "The",
    "This",
    "That",
    "These",
    "Those",
    "It",
    "Its",
    "He",
    "His",
    "She",
    "Her",
    "They",
    "Their",
    "Them",
    "We",
    "Our",
    "You",
    "Your",
    "I",
    "My",
    "There",
    "Here",
    "In",
    "On",
    "At",
    "As",
    "By",
    "For",
    "From",
    "With",
    "Without",
    "Within",
    "Into",
    "Of",
    "To",
    "After",
    "Before",
    "During",
    "Since",
    "Until",
    "Although",
    "Though",
    "While",
    "Whereas",
    "When",
    "Where",
    "Which",
    "Who",
    "Whose",
    "What",
    "Why",
    "How",
    "If",
    "Because",
    "But",
    "And",
    "Or",
    "Nor",
    "So",
    "Yet",
    "However",
    "Also",
    "Both",
    "Each",
    "Every",
    "Either",
    "Neither",
    "Many",
    "Most",
    "More",
    "Much",
    "Some",
    "Several",
    "Such",
    "Other",
    "Another",
    "All",
    "Any",
    "No",
    "Not",
    "One",
    "Two",
    "Three",
    "Four",
    "Five",
    "Six",
    "Seven",
    "Eight",
    "Nine",
    "Ten",
    "First",
    "Second",
    "Third",
    "Later",
    "Today",
    "Now",
    "Then",
    "Thus",
    "Still",
    "Even",
    "Over",
    "Under",
    "About",
    "Around",
    "Among",
    "Between",
    "Through",
    "Throughout",
    "Against",
    "Along",
    "Across",
    "Despite",
    "Unlike",
    "Like",
    "Following",
    "According",
    "Including",
    "Due",
    "Upon",
    "Once",
    "Only",
    "Instead",
    "Indeed",
    "Further",
    "Furthermore",
    "Moreover",
    "Meanwhile",
    "Otherwise",
    "Therefore",
    "Hence",
    "Besides",
    "Nevertheless",
    "Nonetheless",
    "Originally",
    "Later",
    "Since",
    "Despite",
    "Outside",
    "Inside",
    "Beyond",
    "Above",
    "Below",
    "Near",
    "Following",
    "Starting",
    "Beginning",
    "Being",
    "Having",
    "Based",
    "Born",
    "Known",
    "Called",
    "Named",
    "Used",
    "Considered",
    "Regarded",
    "Described",
    "Written",
    "Made",
];

/// Words that, standing alone at a sentence's start, are common words and not names:
/// adverbs, quantifiers and pronouns, adjectives that open generic statements, plural
/// nouns of generic classes, and irregular participles ("Often used in pairs, …", "Set
/// in 1920, …", "Symptoms include …", "Various forms exist"). Only a word standing alone
/// is affected: "New York", "Modern Greek" and "Native Americans" are still names.
const LONE_COMMON: &[&str] = &[
    // adverbs
    "Often",
    "Almost",
    "Perhaps",
    "Sometimes",
    "Rather",
    "Together",
    "Again",
    "Already",
    "Always",
    "Never",
    "Soon",
    "Quite",
    "Very",
    "Too",
    "Just",
    "Else",
    "Elsewhere",
    "Nowadays",
    "Overall",
    "Altogether",
    "Likewise",
    "Except",
    "Behind",
    // quantifiers and pronouns
    "Someone",
    "Something",
    "Everyone",
    "Everything",
    "Anyone",
    "Anything",
    "Nobody",
    "Nothing",
    "None",
    "Others",
    "Less",
    "Fewer",
    "Few",
    "Half",
    "Hundreds",
    "Thousands",
    "Millions",
    "Dozens",
    "Eleven",
    "Twelve",
    "Fifteen",
    "Twenty",
    "Thirty",
    "Forty",
    "Fifty",
    "Sixty",
    "Seventy",
    "Eighty",
    "Ninety",
    "Hundred",
    // adjectives
    "Various",
    "Similar",
    "Certain",
    "Common",
    "Major",
    "Minor",
    "Modern",
    "Different",
    "Additional",
    "Extensive",
    "Large",
    "Larger",
    "Largest",
    "Small",
    "Smaller",
    "Smallest",
    "Older",
    "Newer",
    "Early",
    "Earlier",
    "Recent",
    "Young",
    "Younger",
    "Typical",
    "General",
    "Special",
    "Notable",
    "Prominent",
    "Primary",
    "Prior",
    "Multiple",
    "Pure",
    "True",
    "Whole",
    "Key",
    "New",
    "Old",
    "Native",
    "Natural",
    "Mild",
    "Severe",
    "Female",
    "Male",
    "Influential",
    "Popular",
    "Important",
    "Significant",
    "Main",
    "Traditional",
    "Permanent",
    "Present",
    "Familiar",
    "Problematic",
    "Successive",
    "Prevalent",
    "Diverse",
    "Domestic",
    "Wild",
    "Giant",
    "Heavy",
    "Extant",
    "Solitary",
    "Juvenile",
    // generic classes
    "People",
    "Adults",
    "Individuals",
    "Members",
    "Examples",
    "Exceptions",
    "Signs",
    "Symptoms",
    "Complications",
    "Types",
    "Type",
    "Parts",
    "Part",
    "Definitions",
    "Scholars",
    "Critics",
    "Authors",
    "Writers",
    "Artists",
    // irregular participles
    "Set",
    "Read",
    "Found",
    "Held",
    "Thought",
    "Driven",
    "Built",
    "Given",
    "Taken",
    "Seen",
    "Begun",
    "Left",
    "Brought",
    "Kept",
    "Led",
    "Sold",
    "Told",
    "Won",
    "Put",
    "Shown",
    "Grown",
    "Drawn",
    "Chosen",
    "Spoken",
];

/// Adjectives of people, places, faiths and periods that a suffix does not show.
const DEMONYMS: &[&str] = &[
    "German", "Roman", "Norman", "Greek", "French", "Dutch", "Swiss", "Welsh", "Latin", "Western",
    "Eastern", "Northern", "Southern", "Arab", "Muslim", "Hindu", "Thai", "Norse",
];

/// Lowercase words that may follow a name used as a noun ("Japan is", "India and", "Egypt
/// in"): after one of these a demonym-like word is not read as an adjective.
const AFTER_A_NOUN: &[&str] = &[
    "is", "was", "are", "were", "has", "have", "had", "be", "been", "and", "or", "but", "nor",
    "of", "in", "on", "at", "to", "for", "by", "with", "from", "as", "that", "which", "who",
    "whose", "while", "when", "where", "than", "then", "also", "not", "itself", "himself",
    "herself", "became", "remained", "said", "says", "wrote", "won", "died", "lived",
];

/// Whether `t` reads as an adjective of a people, place, faith or period ("American",
/// "Japanese", "Islamic", "Roman"): by its ending or [`DEMONYMS`].
fn demonym_like(t: &str) -> bool {
    DEMONYMS.contains(&t)
        || ["ian", "ean", "can", "ese", "ish", "ic"]
            .iter()
            .any(|suffix| t.len() > suffix.len() + 2 && t.ends_with(suffix))
}

/// Number words that open a count ("One Thousand and One Nights").
const NUMBER_WORDS: &[&str] = &[
    "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten",
];

/// Whether `word`, one word in any case, is one of the common words that name nothing
/// alone ([`LONE_COMMON`]): "Often", "Symptoms", "Set". A subject that is only such a
/// word is about nothing the chunk names.
pub fn common_word(word: &str) -> bool {
    let word = word.trim();
    let mut chars = word.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    let capitalised: String = first.to_uppercase().chain(chars).collect();
    !word.contains(char::is_whitespace) && LONE_COMMON.contains(&capitalised.as_str())
}

/// Whether a word that stands alone at a sentence's start is a common word there (see
/// [`LONE_COMMON`]), a gerund or participle in "-ing" ("Consisting of …", "Filming
/// began …"), or a number word ("Twenty-one …").
fn lone_common(t: &str) -> bool {
    let head = t.split('-').next().unwrap_or(t);
    LONE_COMMON.contains(&t) || LONE_COMMON.contains(&head) || t.ends_with("ing")
}

/// Whether the chunk writes `word` (capitalised, opening a sentence) in lowercase
/// somewhere, and never capitalised where no sentence opens.
fn lowercase_elsewhere(word: &str, toks: &[Token<'_>]) -> bool {
    let lower = word.to_lowercase();
    if lower == word {
        return false;
    }
    let mut lowercase = false;
    for o in toks {
        let text = without_possessive(o.text);
        if !o.opens && text == word {
            return false;
        }
        lowercase |= text == lower;
    }
    lowercase
}

/// Whether `word` is the first word of the document's title, or its plural ("Bears" of
/// "Bear", "Cetaceans" of "Cetacean", "Salsa" of "Salsa music"): where the chunk writes
/// its topic only so, that word is the topic's name in it.
fn title_word(word: &str, title: Option<&str>) -> bool {
    let Some(first) = title.and_then(|t| t.split([' ', '(']).next()) else {
        return false;
    };
    let (w, first) = (word.to_lowercase(), first.to_lowercase());
    w == first
        || w.strip_suffix('s') == Some(first.as_str())
        || w.strip_suffix("es") == Some(first.as_str())
        || (w.strip_suffix("ies").is_some() && w.strip_suffix("ies") == first.strip_suffix('y'))
}

/// A word of the chunk with its byte span, as the name finder sees it.
#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    text: &'a str,
    start: usize,
    end: usize,
    /// Opens a sentence (the first word of the text, or after `.`, `!`, `?` or a blank line).
    opens: bool,
    /// Only a single space separates it from the previous token.
    joined: bool,
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '\'' | '\u{2019}' | '-' | '.' | '&')
}

fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out: Vec<Token<'_>> = Vec::new();
    // The raw run of word characters before the current gap, and the gap itself.
    let mut prev_raw: Option<&str> = None;
    let mut gap_start = 0;
    let mut start: Option<usize> = None;
    let mut push = |s: usize, e: usize, prev_raw: Option<&str>, gap: &str| {
        let raw = &text[s..e];
        // Dots, apostrophes and hyphens at the ends belong to the sentence, not the word,
        // except an initial's dot ("J.").
        let mut t = raw.trim_end_matches(['\'', '\u{2019}', '-']);
        let initial = t.chars().count() == 2 && t.starts_with(char::is_uppercase);
        if t.ends_with('.') && !initial {
            t = t.trim_end_matches('.');
        }
        let t = t.trim_start_matches(['\'', '\u{2019}', '-', '.']);
        if !t.chars().any(char::is_alphanumeric) {
            return;
        }
        let ended = prev_raw.is_some_and(|p| {
            p.ends_with('.') && !crate::sentences::abbreviation(p.trim_end_matches('.'))
        });
        let opens =
            prev_raw.is_none() || ended || gap.contains(['.', '!', '?']) || gap.contains("\n\n");
        let lead = raw.find(t).unwrap_or(0);
        out.push(Token {
            text: t,
            start: s + lead,
            end: s + lead + t.len(),
            opens,
            joined: gap == " ",
        });
    };
    for (i, c) in text.char_indices() {
        match (word_char(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                push(s, i, prev_raw, &text[gap_start..s]);
                prev_raw = Some(&text[s..i]);
                start = None;
                gap_start = i;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        push(s, text.len(), prev_raw, &text[gap_start..s]);
    }
    out
}

/// Whether `word` is a month's name, as a text writes it ("December 1898").
pub fn is_month(word: &str) -> bool {
    CALENDAR[..12].contains(&word)
}

/// Months and days of the week: the months first.
const CALENDAR: &[&str] = &[
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

fn calendar(t: &str) -> bool {
    CALENDAR.contains(&t)
}

fn capitalised(t: &str) -> bool {
    t.chars().next().is_some_and(char::is_uppercase)
}

fn digits(t: &str) -> bool {
    t.chars().next().is_some_and(|c| c.is_ascii_digit())
}

fn connector(t: &str) -> bool {
    CONNECTORS.contains(&t)
}

/// A sentence-opening word that names nothing alone.
fn opener(t: &str) -> bool {
    OPENERS.contains(&t) || t.ends_with("ly") || t.ends_with("ed")
}

/// `text` with a possessive `'s` (or a bare trailing apostrophe) left off.
fn without_possessive(text: &str) -> &str {
    for suffix in ["'s", "\u{2019}s"] {
        if let Some(base) = text.strip_suffix(suffix) {
            return base;
        }
    }
    text
}

/// Adds `name` (without a possessive) unless it is too short, too long or known.
fn add(names: &mut Vec<String>, name: &str) {
    let name = without_possessive(name.trim());
    if name.chars().count() >= 2
        && name.chars().count() <= MAX_NAME_CHARS
        && name.chars().any(char::is_alphabetic)
        && !names.iter().any(|n| n == name)
    {
        names.push(name.to_owned());
    }
}

/// Where the chunk writes its title (as [`title_in`] found it), as byte spans.
fn title_spans(text: &str, found: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(at) = text.get(from..).and_then(|rest| find_word(rest, found)) {
        spans.push((from + at, from + at + found.len()));
        from += at + found.len();
    }
    spans
}

/// Whether `s..e` is a title at `spans` without what opens it ("The", "A", "2001:") or
/// without the possessive that opens it ("St. Peter's"): the run a name reading finds
/// there, which a model would take for the title.
fn title_tail(text: &str, spans: &[(usize, usize)], s: usize, e: usize) -> bool {
    spans.iter().any(|&(ts, te)| {
        if !(ts < s && e == te) {
            return false;
        }
        let head = &text[ts..s];
        head.split_whitespace().all(|w| {
            let w = w.trim_end_matches([':', ',']);
            opener(w) || w.chars().all(|c| c.is_ascii_digit())
        }) || without_possessive(head.trim_end()) != head.trim_end()
    })
}

/// Small words a title keeps in lowercase ("Encounter in the Dawn").
const TITLE_SMALL_WORDS: &[&str] = &[
    "a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "with", "and", "or", "by",
    "into", "upon",
];

/// The longest quoted title [`quoted_titles`] takes, in words.
const QUOTED_TITLE_WORDS: usize = 8;

/// Byte spans of the titles the text quotes: two to [`QUOTED_TITLE_WORDS`] words between
/// double quotes, the first and last capitalised, every other capitalised or one of
/// [`TITLE_SMALL_WORDS`], with no punctuation inside ("\"Encounter in the Dawn\""). A quoted
/// phrase in lowercase ("orature") or a quoted sentence is not one.
fn quoted_titles(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut open: Option<usize> = None;
    for (i, c) in text.char_indices() {
        match (c, open) {
            ('"' | '\u{201C}', None) => open = Some(i + c.len_utf8()),
            ('"' | '\u{201D}', Some(s)) => {
                open = None;
                let inner = &text[s..i];
                let words: Vec<&str> = inner.split(' ').collect();
                let capitalised = |w: &str| w.starts_with(char::is_uppercase);
                let title = (2..=QUOTED_TITLE_WORDS).contains(&words.len())
                    && words.first().is_some_and(|w| capitalised(w))
                    && words.last().is_some_and(|w| capitalised(w))
                    && words.iter().all(|w| {
                        !w.is_empty()
                            && w.chars().all(|c| {
                                c.is_alphanumeric() || matches!(c, '\'' | '\u{2019}' | '-')
                            })
                            && (capitalised(w) || TITLE_SMALL_WORDS.contains(w))
                    });
                if title {
                    out.push((s, i));
                }
            }
            _ => {}
        }
    }
    out
}

/// The part of `run` before its "and" (or "&") when what follows is one adjective-like
/// word that qualifies the lowercase word after the run (`next`): "Great Depression and
/// Mexican" before "muralists".
fn adjective_after_and<'r, 'a>(
    run: &'r [Token<'a>],
    next: Option<&Token<'a>>,
) -> Option<&'r [Token<'a>]> {
    let (left, right) = split_at_and(run)?;
    (!left.is_empty() && right.len() == 1 && demonym_like(right[0].text) && qualifies_next(next))
        .then_some(left)
}

/// Whether the token after an adjective-like word (`next`) is the lowercase word it
/// qualifies ("American author"), not one that follows a name used as a noun ("Japan
/// is", [`AFTER_A_NOUN`]).
fn qualifies_next(next: Option<&Token<'_>>) -> bool {
    next.is_some_and(|n| {
        n.joined
            && !n.opens
            && n.text.starts_with(char::is_lowercase)
            && !AFTER_A_NOUN.contains(&n.text)
    })
}

/// `run` split at its first "and" (or "&"), that word left out.
fn split_at_and<'r, 'a>(run: &'r [Token<'a>]) -> Option<(&'r [Token<'a>], &'r [Token<'a>])> {
    let k = run.iter().position(|t| t.text == "and" || t.text == "&")?;
    Some((&run[..k], &run[k + 1..]))
}

/// Two names joined by "and" in `run` are also names alone, unless the first has an "of"
/// ("Academy of Motion Picture Arts and Sciences" is one name) or either is a count ("One
/// Thousand and One Nights"); the second never opens with a connector ("the Forty
/// Thieves").
fn add_and_parts(names: &mut Vec<String>, text: &str, run: &[Token<'_>]) {
    let Some((left, right)) = split_at_and(run) else {
        return;
    };
    let right = &right[right.iter().take_while(|t| connector(t.text)).count()..];
    let counted = |part: &[Token<'_>]| {
        part.first()
            .is_some_and(|t| digits(t.text) || NUMBER_WORDS.contains(&t.text))
    };
    if !left.is_empty()
        && !right.is_empty()
        && !left.iter().any(|t| t.text == "of")
        && !counted(left)
        && !counted(right)
    {
        add(names, &text[left[0].start..left[left.len() - 1].end]);
        add(names, &text[right[0].start..right[right.len() - 1].end]);
    }
}

/// The names `text` gives (see the module docs), in order of first appearance, at most
/// [`MAX_NAMES`], each at most [`MAX_NAME_CHARS`] characters and the chunk's own bytes.
pub fn candidates(text: &str, title: Option<&str>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    // Where the chunk writes its title: a run that is its tail is a piece of the title,
    // not a name of its own ("A Space Odyssey" of "2001: A Space Odyssey").
    let mut spans: Vec<(usize, usize)> = Vec::new();
    if let Some(found) = title.and_then(|t| title_in(text, t)) {
        // The title is what the document is about, figures and all ("1", "100 metres").
        names.push(found.to_owned());
        spans = title_spans(text, found);
    }
    let toks = tokens(text);
    let quoted = quoted_titles(text);
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        // A quoted title is one name, small words and all ("Encounter in the Dawn").
        if let Some(&(s, e)) = quoted.iter().find(|&&(s, e)| s <= t.start && t.end <= e) {
            add(&mut names, &text[s..e]);
            while i < toks.len() && toks[i].end <= e {
                i += 1;
            }
            continue;
        }
        let starts = capitalised(t.text) && !(t.opens && opener(t.text));
        if !starts {
            i += 1;
            continue;
        }
        // Extend over capitalised words, figures and connectors joined by single spaces.
        let mut j = i;
        let mut last_name_word = i;
        // A possessive ends a name: "Seurat's most famous work".
        while without_possessive(toks[j].text) == toks[j].text
            && j + 1 < toks.len()
            && toks[j + 1].joined
            && !toks[j + 1].opens
        {
            let n = toks[j + 1].text;
            // A figure belongs to the name it follows directly ("HAL 9000"), never to one
            // across a connector ("Lake Gaoyou on 25 August").
            if capitalised(n) || (digits(n) && j == last_name_word) {
                j += 1;
                last_name_word = j;
            } else if connector(n) {
                j += 1;
            } else {
                break;
            }
        }
        let run = &toks[i..=last_name_word];
        // A date names nothing: "June", "August 1931", "Monday".
        if run.iter().all(|t| calendar(t.text) || digits(t.text)) {
            i = last_name_word + 1;
            continue;
        }
        // One capitalised word that opens a sentence and starts a longer name already
        // found ("Chamber" of the title "Chamber music") is that name's first word.
        let lone_opener = run.len() == 1
            && t.opens
            && (names
                .iter()
                .any(|n| n.len() > t.text.len() && n.starts_with(t.text))
                // A common word alone at a sentence's start, unless the chunk also
                // writes it capitalised where no sentence opens ("… in Beijing").
                || (lone_common(t.text)
                    && !toks
                        .iter()
                        .any(|o| !o.opens && without_possessive(o.text) == t.text))
                // A word capitalised only where a sentence opens and written lowercase
                // elsewhere in the chunk is a common noun there ("Interpretation occurs
                // …" beside "the actor's interpretation").
                || (lowercase_elsewhere(t.text, &toks) && !title_word(t.text, title)));
        // One word that, wherever the chunk writes it, qualifies the lowercase word after
        // it ("American author", "Japanese media franchise") is an adjective, not a name.
        let adjective = run.len() == 1
            && demonym_like(t.text)
            && toks
                .iter()
                .enumerate()
                .filter(|(_, o)| o.text == t.text)
                .all(|(k, _)| qualifies_next(toks.get(k + 1)));
        let (run_start, run_end) = (run[0].start, run[run.len() - 1].end);
        // "the Great Depression and Mexican muralists": the word after "and" qualifies
        // the lowercase noun after the run, so neither the run nor that word is a name;
        // what stands before "and" still is, unless it qualifies the noun as well
        // ("Spanish and Mexican authorities").
        if let Some(left) = adjective_after_and(run, toks.get(last_name_word + 1)) {
            if !(left.len() == 1 && demonym_like(left[0].text)) {
                add(&mut names, &text[left[0].start..left[left.len() - 1].end]);
            }
            i = last_name_word + 1;
            continue;
        }
        if title_tail(text, &spans, run_start, run_end) {
            i = last_name_word + 1;
            continue;
        }
        if !lone_opener && !adjective {
            add(&mut names, &text[run_start..run_end]);
        }
        // A title is one name ("War and Peace").
        if !spans
            .iter()
            .any(|&(ts, te)| ts <= run_start && run_end <= te)
        {
            add_and_parts(&mut names, text, run);
        }
        i = last_name_word + 1;
    }
    names.truncate(MAX_NAMES);
    names
}

/// A title without a trailing disambiguation in parentheses ("Casablanca (film)" gives
/// "Casablanca"), and whether it had one.
pub fn unqualified_title(title: &str) -> (&str, bool) {
    let title = title.trim();
    match title.rfind(" (") {
        Some(at) if title.ends_with(')') => (&title[..at], true),
        _ => (title, false),
    }
}

/// The title as the chunk writes it, without a trailing disambiguation in parentheses:
/// found as written, or with its first letter's case changed.
pub fn title_in<'t>(text: &'t str, title: &str) -> Option<&'t str> {
    let (title, _) = unqualified_title(title);
    let mut first = title.chars();
    let head = first.next()?;
    let flipped: String = if head.is_uppercase() {
        head.to_lowercase().chain(first).collect()
    } else {
        head.to_uppercase().chain(first).collect()
    };
    [title, flipped.as_str()].into_iter().find_map(|t| {
        let at = find_word(text, t)?;
        Some(&text[at..at + t.len()])
    })
}

/// The first occurrence of `needle` in `text` that starts and ends at a word boundary.
pub fn find_word(text: &str, needle: &str) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    let mut from = 0;
    while let Some(at) = text[from..].find(needle).map(|i| i + from) {
        let end = at + needle.len();
        let before = text[..at].chars().next_back();
        let after = text[end..].chars().next();
        if !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric) {
            return Some(at);
        }
        from = at + text[at..].chars().next().map_or(1, char::len_utf8);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        candidates(text, None)
    }

    #[test]
    fn runs_of_capitalised_words_with_their_connectors() {
        let text = "They are presented by the Academy of Motion Picture Arts and Sciences in the United States.";
        assert_eq!(
            names(text),
            [
                "Academy of Motion Picture Arts and Sciences",
                "United States"
            ]
        );
        let text = "A Sunday Afternoon on the Island of La Grande Jatte was painted from 1884 to 1886 and is Georges Seurat's most famous work.";
        assert_eq!(
            names(text),
            [
                "Sunday Afternoon on the Island of La Grande Jatte",
                "Georges Seurat"
            ]
        );
    }

    #[test]
    fn two_names_joined_by_and_are_names_alone_too() {
        let text = "The film stars Keir Dullea and Gary Lockwood, and HAL 9000.";
        assert_eq!(
            names(text),
            [
                "Keir Dullea and Gary Lockwood",
                "Keir Dullea",
                "Gary Lockwood",
                "HAL 9000"
            ]
        );
    }

    #[test]
    fn a_quoted_title_is_one_name() {
        let text = "Its plot was inspired by \"The Sentinel\" (1951) and \"Encounter in the Dawn\" (1953).";
        assert_eq!(names(text), ["The Sentinel", "Encounter in the Dawn"]);
        let text = "The single \u{201C}Hey Jude\u{201D} topped the charts in Britain.";
        assert_eq!(names(text), ["Hey Jude", "Britain"]);
        // A quoted word, a lowercase phrase or a sentence is no title.
        let text =
            "Oral literature (\"orature\") in Africa. He said \"We Will Win, Today.\" in Paris.";
        assert_eq!(
            names(text),
            ["Oral", "Africa", "We Will Win", "Today", "Paris"]
        );
    }

    #[test]
    fn an_adjective_after_and_qualifies_the_noun_after_it() {
        let text = "He drew on the Great Depression and Mexican muralists.";
        assert_eq!(names(text), ["Great Depression"]);
        let text = "Spanish and Mexican authorities met in Texas.";
        assert_eq!(names(text), ["Texas"]);
        // A name used as a noun, or a second name of more than one word, stays.
        let text = "It sailed between Spain and Mexican ports. It joined Spain and Mexico.";
        assert_eq!(names(text), ["Spain", "Spain and Mexico", "Mexico"]);
        let text = "They fought the French and Indian War in America.";
        assert!(names(text).contains(&"French and Indian War".to_owned()));
    }

    #[test]
    fn sentence_openers_name_nothing_but_a_topic_word_does() {
        assert_eq!(
            names("Electrons are light. It is known. However, Paris is big."),
            ["Electrons", "Paris"]
        );
        assert_eq!(
            names("Filmed and set during World War II, it focuses on Rick."),
            ["World War II", "Rick"]
        );
        assert_eq!(names("J. D. Salinger wrote it."), ["J. D. Salinger"]);
    }

    #[test]
    fn a_common_word_alone_at_a_sentence_start_names_nothing() {
        assert!(names("Often used in pairs, cymbals are round.").is_empty());
        assert!(names("Set in 1920, it was long. Symptoms include fever.").is_empty());
        assert!(names("Consisting of two parts, it was sold. Twenty-one were built.").is_empty());
        // A name that begins with such a word, or the word written capitalised where no
        // sentence opens, is still a name.
        assert_eq!(
            names("New York is big. Native Americans live there. Modern Greek is spoken."),
            ["New York", "Native Americans", "Modern Greek"]
        );
        assert_eq!(
            names("Reading is a town. It lies near Reading Abbey."),
            ["Reading", "Reading Abbey"]
        );
        assert_eq!(
            names("Electrons are light. Beetles fly."),
            ["Electrons", "Beetles"]
        );
    }

    #[test]
    fn a_word_the_chunk_also_writes_lowercase_names_nothing_unless_it_is_the_title() {
        let text = "The actor's interpretation of a role matters. \
                    Interpretation occurs even when actors play themselves.";
        assert_eq!(candidates(text, Some("Actor")), ["actor"], "the title only");
        // The title's word, or its plural, is the topic's name where the chunk writes it so.
        let text = "Bears are mammals. Most bears live in the north.";
        assert_eq!(candidates(text, Some("Bear")), ["Bears"]);
        let text = "Salsa is a style of music. It grew from salsa clubs.";
        assert_eq!(candidates(text, Some("Salsa music")), ["Salsa"]);
        // Capitalised where no sentence opens too: a name ("Reading", the town).
        let text = "Reading is a town with a reading room. It lies near Reading Abbey.";
        assert_eq!(candidates(text, None), ["Reading", "Reading Abbey"]);
        // Never written lowercase: kept.
        assert_eq!(
            names("Electrons are light. Beetles fly."),
            ["Electrons", "Beetles"]
        );
    }

    #[test]
    fn the_title_counts_as_the_chunk_writes_it() {
        let text = "Chamber music is a form of classical music.";
        assert_eq!(candidates(text, Some("Chamber music")), ["Chamber music"]);
        let text = "Casablanca is a 1942 American film.";
        assert_eq!(candidates(text, Some("Casablanca (film)")), ["Casablanca"]);
        let text = "2001: A Space Odyssey is a 1968 film by Stanley Kubrick.";
        assert_eq!(
            candidates(text, Some("2001: A Space Odyssey")),
            ["2001: A Space Odyssey", "Stanley Kubrick"]
        );
        // A title the chunk does not contain is not offered.
        assert_eq!(candidates("Paris is big.", Some("London")), ["Paris"]);
    }

    #[test]
    fn names_are_the_chunks_bytes_and_bounded() {
        let text = "Zürich and Genève are in Switzerland. ".repeat(30);
        let got = candidates(&text, None);
        assert!(got.len() <= MAX_NAMES);
        for n in &got {
            assert!(text.contains(n.as_str()), "{n}");
        }
        let long = format!("{} is long.", "Word ".repeat(40).trim());
        assert!(candidates(&long, None).is_empty());
    }

    #[test]
    fn an_adjective_of_a_people_or_place_is_no_name() {
        assert_eq!(
            names("It was written by American author Mark Twain in Japanese media."),
            ["Mark Twain"]
        );
        // As a noun, or beside another capitalised word, it is a name.
        assert_eq!(
            names("Many speak Japanese and Korean. The American Revolution ended. Iran is big."),
            [
                "Japanese and Korean",
                "Japanese",
                "Korean",
                "American Revolution",
                "Iran"
            ]
        );
        // Used once as a noun, it is a name wherever else it qualifies a word.
        assert_eq!(
            names("Roman law spread. It was written in Latin, the language of Roman law."),
            ["Latin"]
        );
    }

    #[test]
    fn a_piece_of_the_title_is_no_name_of_its_own() {
        let text = "2001: A Space Odyssey is a 1968 film by Stanley Kubrick. Its working title \
                    was A Space Odyssey.";
        assert_eq!(
            candidates(text, Some("2001: A Space Odyssey")),
            [
                "2001: A Space Odyssey",
                "Stanley Kubrick",
                "A Space Odyssey"
            ],
            "inside the title it is the title; alone it is still a name"
        );
        let text = "Ali Baba and the Forty Thieves is a folk tale. Ali Baba is poor.";
        assert_eq!(
            candidates(text, Some("Ali Baba and the Forty Thieves")),
            ["Ali Baba and the Forty Thieves", "Ali Baba"]
        );
        // Other names inside a title are names: the place of "Architecture of
        // Mesopotamia", the saint of "St. Peter's Basilica".
        let text = "The architecture of Mesopotamia is ancient.";
        assert_eq!(
            candidates(text, Some("Architecture of Mesopotamia")),
            ["architecture of Mesopotamia", "Mesopotamia"]
        );
        let text = "St. Peter's Basilica is a church in Vatican City.";
        assert_eq!(
            candidates(text, Some("St. Peter's Basilica")),
            ["St. Peter's Basilica", "St. Peter", "Vatican City"]
        );
        // A count joined by "and" is one name.
        assert_eq!(
            names("It is a tale of One Thousand and One Nights."),
            ["One Thousand and One Nights"]
        );
        // Outside a title, two names joined by "and" are each a name, without a leading
        // connector.
        assert_eq!(
            names("It was sold to Sotheby and the Louvre."),
            ["Sotheby and the Louvre", "Sotheby", "Louvre"]
        );
    }

    #[test]
    fn find_word_respects_word_boundaries() {
        assert_eq!(find_word("Parisian Paris", "Paris"), Some(9));
        assert_eq!(find_word("Parisian", "Paris"), None);
    }
}
