//! What a mention's own document says its name stands for, read so that
//! [`JoinRule::SameName`] does not join two things of one name across documents when
//! their documents tell them apart: two titles that qualify one name differently ("Jin
//! dynasty (266–420)", "Jin dynasty (1115–1234)"), two longer names a short one stands for
//! ("BP" for "Blood pressure" in one summary and for "Before Present" in another; "Lee"
//! in "Bruce Lee" and in "Ang Lee"), two kinds of place ("the state of Georgia", "Georgia is
//! a country"), two years ("the 1856 Treaty of Paris"), two makers of a work ("His David"
//! in Donatello's summary, "David (Michelangelo)"). A document that says nothing of the
//! kind keeps every join it had: the reading only ever withholds a join, never makes one.

use std::collections::HashMap;

use relata_core::{EntityType, closed_enum};

use super::{Join, JoinRule, Mention, name_key};

/// What a mention's document says the mention's name stands for; each part `None` where
/// it says nothing (most mentions).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Described {
    /// The document's title, as written, where the name is that title less a qualifier in
    /// parentheses: the collection's own way of naming one of several things of a name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// For a one-word name, the longer name (as [`name_key`] reads it) the document gives
    /// for it: by the in-text rules (the full name a surname or an acronym stands for there)
    /// or, for a person, the title's person ("Lee" in "Bruce Lee").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub longer: Option<String>,
    /// The kind of place or polity the document calls a name that is not a person's,
    /// where every sentence that calls it one agrees ("the state of Georgia", "Georgia
    /// is a country", "Its capital and largest city, Victoria,", "rivers such as the
    /// Amazon"), or its title's qualifier unless the mention's own sentence says another.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The year the text dates the name by, where every place that dates it agrees: for
    /// an event or a work, "the 1856 Treaty of Paris", "the December 1898 Treaty of
    /// Paris", "World War I (1914–1918)", "In 1783, in the Treaty of Paris"; for anything
    /// else but a person, only a span of years in parentheses, "Jin dynasty (266–420)",
    /// or a title qualified so. Two treaties, two editions, two dynasties of a name are
    /// told apart by it; a person is never dated, and a place not by a year near it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub year: Option<String>,
    /// For a work, who made it (as [`name_key`] reads the name), where every place that
    /// says agrees: a title's qualifier of names only ("David (Michelangelo)", "Imagine
    /// (John Lennon song)"), "Michelangelo's David", or "His David" in the summary of a
    /// person. Two statues, two songs of a name are told apart by it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maker: Option<String>,
}

closed_enum! {
    /// Which reading of two documents says a name in each is a different thing.
    pub enum Apart: "described apart" {
        /// Two titles qualify the name differently.
        Title = "title",
        /// The short name stands for two longer names that are not one name written
        /// shorter ("Franklin D. Roosevelt" and "Franklin Delano Roosevelt" agree).
        LongerName = "longer_name",
        /// Two kinds of place or polity.
        Kind = "kind",
        /// Two years date the name: two events, two works, two dynasties.
        Year = "year",
        /// Two works of the name by two makers that are not one name.
        Maker = "maker",
        /// Two or more things of the name are established (by titles, or each by two
        /// documents), and this document says not which it means: not by its own title's
        /// qualifier, nor by sharing more names with one's documents than with the rest.
        /// Not a reading that the two are two things; a person decides.
        Unsaid = "unsaid",
    }
}

impl Described {
    /// Whether the document says nothing of the name.
    pub fn is_empty(&self) -> bool {
        self.title.is_none()
            && self.longer.is_none()
            && self.kind.is_none()
            && self.year.is_none()
            && self.maker.is_none()
    }

    /// Which reading says the two are different things, if one does; a part only one side
    /// has says nothing.
    pub fn apart_from(&self, other: &Described) -> Option<Apart> {
        if let (Some(a), Some(b)) = (&self.title, &other.title)
            && crate::normalize::key(a) != crate::normalize::key(b)
        {
            return Some(Apart::Title);
        }
        if let (Some(a), Some(b)) = (&self.longer, &other.longer)
            && !one_name(a, b)
        {
            return Some(Apart::LongerName);
        }
        if let (Some(a), Some(b)) = (&self.kind, &other.kind)
            && a != b
        {
            return Some(Apart::Kind);
        }
        if let (Some(a), Some(b)) = (&self.year, &other.year)
            && a != b
        {
            return Some(Apart::Year);
        }
        if let (Some(a), Some(b)) = (&self.maker, &other.maker)
            && !one_name(a, b)
        {
            return Some(Apart::Maker);
        }
        None
    }

    /// Take what `other` says where `self` says nothing: a group of mentions is described
    /// by the first of its members that says each thing.
    pub fn absorb(&mut self, other: &Described) {
        for (mine, theirs) in [
            (&mut self.title, &other.title),
            (&mut self.longer, &other.longer),
            (&mut self.kind, &other.kind),
            (&mut self.year, &other.year),
            (&mut self.maker, &other.maker),
        ] {
            if mine.is_none() {
                mine.clone_from(theirs);
            }
        }
    }
}

/// Whether two longer names (keys) may be one name: every word of the one with fewer
/// words is a word of the other, or an initial of one ("franklin d. roosevelt",
/// "franklin delano roosevelt"; "soviet union", "union of soviet socialist republics").
fn one_name(a: &str, b: &str) -> bool {
    let words = |k: &str| -> Vec<String> {
        k.split(|c: char| c.is_whitespace() || c == '-')
            .filter(|w| !w.is_empty() && !matches!(*w, "of" | "and" | "the" | "for" | "&"))
            .map(str::to_owned)
            .collect()
    };
    let (mut short, mut long) = (words(a), words(b));
    if short.len() > long.len() {
        std::mem::swap(&mut short, &mut long);
    }
    // Keys keep no full stops ([`name_key`]): an initial is one letter.
    let initial =
        |i: &str, w: &str| i.chars().count() == 1 && w.len() > i.len() && w.starts_with(i);
    short.iter().all(|s| {
        long.iter()
            .any(|l| l == s || initial(s, l) || initial(l, s))
    })
}

/// The kinds [`Described::kind`] reads, by the word a text uses (singular or plural),
/// words for one kind read as that kind.
const KINDS: &[(&str, &str)] = &[
    ("country", "country"),
    ("countries", "country"),
    ("republic", "country"),
    ("kingdom", "country"),
    ("nation", "country"),
    ("state", "state"),
    ("states", "state"),
    ("province", "province"),
    ("provinces", "province"),
    ("city", "city"),
    ("cities", "city"),
    ("town", "city"),
    ("village", "village"),
    ("county", "county"),
    ("counties", "county"),
    ("district", "district"),
    ("region", "region"),
    ("river", "river"),
    ("rivers", "river"),
    ("island", "island"),
    ("islands", "island"),
    ("lake", "lake"),
    ("sea", "sea"),
    ("mountain", "mountain"),
    ("empire", "empire"),
    ("dynasty", "dynasty"),
    ("villages", "village"),
    ("towns", "city"),
    ("municipality", "city"),
    ("districts", "district"),
    ("regions", "region"),
    ("lakes", "lake"),
    ("seas", "sea"),
    ("mountains", "mountain"),
    ("empires", "empire"),
    ("dynasties", "dynasty"),
    ("forest", "forest"),
    ("forests", "forest"),
    ("rainforest", "forest"),
    ("rainforests", "forest"),
];

pub(super) fn kind_of(word: &str) -> Option<&'static str> {
    KINDS.iter().find(|(w, _)| *w == word).map(|(_, k)| *k)
}

/// The kind a kind word gives in the singular: a name's last word as part of the name
/// ("Amazon River", "New York City", what [`super::JoinRule::KindName`] reads), the
/// word before "of" ("the state of"; "the rainforests of Indonesia" are in it).
pub(super) fn kind_word(word: &str) -> Option<&'static str> {
    (!word.ends_with('s')).then(|| kind_of(word))?
}

/// Every word [`kind_word`] reads.
pub(super) fn kind_words() -> impl Iterator<Item = &'static str> {
    KINDS.iter().map(|(w, _)| *w).filter(|w| !w.ends_with('s'))
}

/// Words that end the modifiers before a noun ("a country in …", "the capital of …").
const ENDS_PHRASE: &[&str] = &[
    "of", "in", "on", "at", "from", "by", "with", "for", "to", "and", "or", "that", "which", "who",
    "whose", "where", "near", "between", "along", "across", "within", "into", "than", "as",
];

/// The kind a kind word gives after the word before it: "a state" after a common word is
/// mostly a polity's role ("a participating state", "neighbouring states such as"), not
/// a federated state; a sovereign one is a country.
fn polity(kind: &'static str, previous: Option<&str>) -> Option<&'static str> {
    match (kind, previous) {
        ("state", Some("sovereign")) => Some("country"),
        ("state", Some(p)) if p.chars().next().is_some_and(char::is_lowercase) => None,
        _ => Some(kind),
    }
}

/// A capitalised word that may stand before a kind as a modifier, not a name of its own:
/// an abbreviation ("U.S.") or a people's adjective ("Australian", "Brazilian",
/// "Japanese"), so that "the Lower Mainland region of" says nothing of the name after it.
fn proper_modifier(word: &str) -> bool {
    word.chars().next().is_some_and(char::is_uppercase)
        && (word.contains('.')
            || ["an", "ese", "ish", "i"]
                .iter()
                .any(|end| word.ends_with(end)))
}

/// Whether the occurrence of `name` at `at` is part of a longer name: a capitalised word
/// right before it in the same sentence ("Great Zimbabwe") or right after it ("Zimbabwe
/// Airways").
fn inside_longer_name(text: &str, at: usize, name: &str) -> bool {
    let capitalised = |w: &str| w.chars().next().is_some_and(char::is_uppercase);
    let name_word = |w: &str| capitalised(w) && !w.ends_with(['.', '!', '?', ':', ';']);
    // "Île-de-France": joined by a hyphen, a piece of a longer name.
    if text[..at].ends_with('-') || text[at + name.len()..].starts_with('-') {
        return true;
    }
    let mut words = text[..at]
        .strip_suffix(' ')
        .unwrap_or("")
        .split_whitespace()
        .rev();
    // "Great Zimbabwe", and a name's tail after a connector: "Great Wall of China",
    // "Kingdom of France", "Tour de France".
    // An article or a preposition that opens a sentence is no part of the name: "The
    // Amazon is a …", "During World War II (1939–1945), …".
    let before = match words.next() {
        Some(
            "The" | "A" | "An" | "In" | "On" | "At" | "By" | "During" | "After" | "Before"
            | "Since" | "Until" | "From" | "With" | "For" | "Under" | "Following",
        ) => false,
        Some(w) if name_word(w) => true,
        Some("of" | "de" | "du" | "del" | "la") => words.next().is_some_and(name_word),
        _ => false,
    };
    let after = text[at + name.len()..]
        .strip_prefix(' ')
        .and_then(|a| a.split_whitespace().next())
        .is_some_and(capitalised);
    before || after
}

/// The kind a list gives the name at `at` as one of its items: after "KIND such as"
/// ("major rivers such as the Amazon, the Mississippi, and the Congo"), or before "and
/// [the] OTHER KIND" ("the Amazon and Ganges–Brahmaputra rivers"). Every item between must
/// be a name, so that "rivers such as the Amazon flow into seas near Brazil" says nothing
/// of Brazil. A kind word right after a name is not read: the name is often an adjective
/// there ("the Caribbean island of", "the Île-de-France region").
fn listed_kind(text: &str, at: usize, name: &str) -> Option<&'static str> {
    let sentence = text[..at].rfind(". ").map_or(0, |i| i + 2);
    if let Some((head, items)) = text[sentence..at].rsplit_once(" such as ")
        && items.split_whitespace().all(|w| {
            let w = w.trim_end_matches(',');
            matches!(w, "the" | "and" | "or") || w.chars().next().is_some_and(char::is_uppercase)
        })
        && let mut head = head.split_whitespace().rev()
        && let Some(kind) = head.next().and_then(kind_of)
        // "regions such as" is too loose a kind to tell two things apart by.
        && kind != "region"
    {
        return polity(kind, head.next());
    }
    let after = &text[at + name.len()..];
    let word = |w: &str| w.trim_end_matches([',', '.', ';', ':', ')']).to_owned();
    let mut words = after.split_whitespace();
    if after.starts_with(' ') && words.next() == Some("and") {
        let mut next = words.next();
        if next == Some("the") {
            next = words.next();
        }
        // One to three capitalised words, then the plural kind.
        let mut named = 0;
        while next.is_some_and(|w| w.chars().next().is_some_and(char::is_uppercase)) {
            named += 1;
            next = words.next();
        }
        if (1..=3).contains(&named)
            && let Some(w) = next
            && word(w).ends_with('s')
        {
            return kind_of(&word(w));
        }
    }
    None
}

/// The kind one occurrence of `name` at `at` in `text` is given: "the [U.S.] state of
/// NAME", "… city, NAME", "its largest city is NAME", a list of a kind's things
/// ([`listed_kind`]), or "NAME[,] is/was a/an/the [modifiers] KIND".
fn kind_at(text: &str, at: usize, name: &str) -> Option<&'static str> {
    if inside_longer_name(text, at, name) {
        return None;
    }
    // Not the name of a thing, but its possessor ("Egypt's"), which a kind word before
    // it does not describe.
    if text[at + name.len()..].starts_with(['\'', '’']) {
        return None;
    }
    if let Some(kind) = listed_kind(text, at, name) {
        return Some(kind);
    }
    let before: Vec<&str> = text[..at].split_whitespace().rev().take(6).collect();
    // In the singular: "the rainforests of Indonesia" are in Indonesia.
    if before.first() == Some(&"of")
        && let Some(kind) = before.get(1).and_then(|w| kind_word(w))
    {
        let mut rest = before[2..].iter();
        let mut next = rest.next();
        for _ in 0..3 {
            if next.is_some_and(|w| proper_modifier(w)) {
                next = rest.next();
            }
        }
        // One thing of the kind, so a name that goes on after "and" is a piece of it:
        // "the province of Newfoundland and Labrador".
        let goes_on = text[at + name.len()..]
            .strip_prefix(" and ")
            .is_some_and(|r| r.starts_with(char::is_uppercase));
        if matches!(next, Some(&("the" | "The"))) && !goes_on {
            return Some(kind);
        }
    }
    // "Its most populous city is São Paulo": the kind is the subject's, and the name
    // what it is.
    if matches!(before.first(), Some(&"is" | &"was"))
        && let Some(kind) = before.get(1).and_then(|w| kind_of(w))
        // A modifier before the kind ("most populous", "its"), not an article: "the
        // capital of the state is Atlanta" says what the capital is.
        && before.get(2).is_some_and(|w| {
            w.chars().next().is_some_and(char::is_lowercase)
                && !matches!(*w, "the" | "a" | "an")
                && !ENDS_PHRASE.contains(w)
        })
    {
        return Some(kind);
    }
    // "… city, Victoria,": an apposition, which closes after the name ("of the country,
    // Wallonia is" is none), unless the kind is a named one's ("Zhejiang province, China"
    // places the province in China).
    if text[..at].ends_with(", ")
        && text[at + name.len()..].starts_with([',', '.', ';', ')'])
        && let Some(kind) = before
            .first()
            .and_then(|w| w.strip_suffix(','))
            .and_then(kind_of)
        && !before
            .get(1)
            .is_some_and(|w| w.chars().next().is_some_and(char::is_uppercase))
    {
        return Some(kind);
    }
    let after = &text[at + name.len()..];
    let after = after.strip_prefix(',').unwrap_or(after);
    let rest = [" is ", " was "]
        .iter()
        .find_map(|v| after.strip_prefix(v))?;
    let rest = ["a ", "an ", "the "]
        .iter()
        .find_map(|a| rest.strip_prefix(a))?;
    let mut kind = None;
    let mut previous: Option<&str> = None;
    for token in rest.split_whitespace().take(6) {
        let word = token.trim_end_matches([',', ';', ':', ')']);
        // An abbreviation keeps its full stop ("U.S."); a word that ends a sentence not.
        let word = match word.strip_suffix('.') {
            Some(w) if !w.contains('.') => w,
            _ => word,
        };
        let lowercase = word.chars().next().is_some_and(char::is_lowercase);
        // "the capital and largest city": modifiers joined by "and".
        if word == "and" && kind.is_none() && previous.is_some() && word.len() == token.len() {
            continue;
        }
        if ENDS_PHRASE.contains(&word) || !(lowercase || proper_modifier(word)) {
            break;
        }
        if let Some(k) = kind_of(word) {
            kind = polity(k, previous);
        }
        if word.len() != token.len() {
            break;
        }
        previous = Some(word);
    }
    kind
}

/// The kind `text` gives `name` wherever it gives one, if every such place agrees.
fn kind_in(text: &str, name: &str) -> Option<&'static str> {
    agreed(text, name, |at| kind_at(text, at, name))
}

/// What `read` reads at every occurrence of `name` in `text` where it reads something,
/// if every such reading agrees; else nothing.
fn agreed<T: PartialEq>(
    text: &str,
    name: &str,
    mut read: impl FnMut(usize) -> Option<T>,
) -> Option<T> {
    let mut found = None;
    let mut from = 0;
    while let Some(at) = relata_core::names::find_word(&text[from..], name).map(|i| i + from) {
        if let Some(r) = read(at) {
            if found.as_ref().is_some_and(|f| *f != r) {
                return None;
            }
            found = Some(r);
        }
        from = at + name.len();
    }
    found
}

/// A year as a summary writes one: three or four digits.
fn year(word: &str) -> Option<&str> {
    ((3..=4).contains(&word.len()) && word.bytes().all(|b| b.is_ascii_digit())).then_some(word)
}

/// How a name of a type may be dated ([`Described::year`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dating {
    /// An event: "the [MONTH] YEAR NAME", "NAME (YEAR–…)", "NAME of YEAR", and the
    /// opening date of a sentence whose next phrase is "in the NAME".
    Event,
    /// A work: as an event, and "NAME (YEAR)".
    Work,
    /// Anything else but a person: only a span of years in parentheses after the name,
    /// as the collection qualifies a title ("Jin dynasty (266–420)"). A person is not
    /// dated: a lifespan and a reign are both written so.
    Span,
}

/// The year one occurrence of `name` at `at` is dated by, in its own phrase (see
/// [`Dating`]). An event's one year in parentheses may date a part of it ("the end of
/// World War II (1945)").
fn year_at<'t>(text: &'t str, at: usize, name: &str, dating: Dating) -> Option<&'t str> {
    // "the Western Jin dynasty (266–316)" dates another name.
    if inside_longer_name(text, at, name) {
        return None;
    }
    if dating != Dating::Span
        && let Some(y) = year_before(&text[..at])
    {
        return Some(y);
    }
    let after = &text[at + name.len()..];
    let (rest, parenthesised) = match after.strip_prefix(" (") {
        Some(rest) => (rest, true),
        None if dating == Dating::Span => return None,
        None => (after.strip_prefix(" of ")?, false),
    };
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let dated = match rest[digits..].chars().next() {
        Some('–' | '-') => {
            rest[digits..]
                .chars()
                .nth(1)
                .is_some_and(|c| c.is_ascii_digit())
                || dating != Dating::Span
        }
        Some(')') => dating == Dating::Work,
        None | Some(',' | '.' | ' ' | ';') => !parenthesised,
        _ => false,
    };
    dated.then(|| year(&rest[..digits]))?
}

/// The year the words before a name date it by: "the [MONTH] YEAR NAME", or a sentence
/// that opens with its date and goes straight on to the name's phrase: "In 1783, in the
/// Treaty of Paris, …", "On September 3, 1783, at the …". A date that opens a sentence
/// before any other phrase ("In 1919, after World War I") dates the sentence, not the
/// name.
fn year_before(before: &str) -> Option<&str> {
    let mut words = before.strip_suffix(' ')?.rsplit(' ');
    let last = words.next()?;
    if let Some(y) = year(last) {
        let mut next = words.next();
        if next.is_some_and(relata_core::names::is_month) {
            next = words.next();
        }
        return matches!(next, Some("the" | "The")).then_some(y);
    }
    if last != "the" || !matches!(words.next(), Some("in" | "at")) {
        return None;
    }
    let y = words.next()?.strip_suffix(',').and_then(year)?;
    let mut next = words.next()?;
    if next
        .strip_suffix(',')
        .is_some_and(|d| d.len() <= 2 && d.bytes().all(|b| b.is_ascii_digit()))
    {
        next = words.next()?;
    }
    if relata_core::names::is_month(next) {
        next = words.next()?;
    }
    let opens = words.next().is_none_or(|w| w.ends_with('.'));
    (opens && matches!(next, "In" | "On")).then_some(y)
}

/// A run of capitalised words, as a maker's name is written ("John Lennon"), or none.
fn capitalised_run<'a>(words: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    words
        .take_while(|w| {
            w.chars().next().is_some_and(char::is_uppercase)
                && !w.ends_with(['.', ',', ';', ':'])
                && !matches!(
                    *w,
                    "The"
                        | "A"
                        | "An"
                        | "In"
                        | "On"
                        | "At"
                        | "By"
                        | "For"
                        | "From"
                        | "With"
                        | "As"
                        | "After"
                        | "Before"
                        | "During"
                        | "His"
                        | "Her"
                        | "Its"
                        | "Their"
                        | "It"
                        | "He"
                        | "She"
                        | "They"
                        | "This"
                        | "That"
                )
        })
        .collect()
}

/// The maker a work's title qualifier names: names only, or names and the kind of work
/// ("Michelangelo", "John Lennon song"); not a year or a kind alone ("1997 film").
fn qualifier_maker(qualifier: &str) -> Option<String> {
    let mut words: Vec<&str> = qualifier.split_whitespace().collect();
    if words
        .last()
        .is_some_and(|w| w.chars().all(char::is_lowercase))
    {
        words.pop();
    }
    let run = capitalised_run(words.iter().copied());
    (!run.is_empty() && run.len() == words.len()).then(|| name_key(&run.join(" ")))
}

/// Who one occurrence of the work `name` at `at` is said to be made by, in its own
/// phrase: "Michelangelo's David", or "His David" where the document is the summary of a
/// person (`person`, its title's key). Not "David by Donatello": "the bombing of Guernica
/// by German warplanes" is written so too.
fn maker_at(text: &str, at: usize, name: &str, person: Option<&str>) -> Option<String> {
    // "David Copperfield" is another work. (A possessive before it is read, though
    // "Queen Anne's War" is written so too: a whole name is the model's mention.)
    let after = &text[at + name.len()..];
    if after.starts_with('-')
        || after
            .strip_prefix(' ')
            .is_some_and(|a| a.chars().next().is_some_and(char::is_uppercase))
    {
        return None;
    }
    let before = text[..at].strip_suffix(' ')?;
    let mut back = before.rsplit(' ');
    let last = back.next()?;
    if matches!(last, "His" | "his" | "Her" | "her") {
        return person.map(str::to_owned);
    }
    if let Some(owner) = ["'s", "’s"].iter().find_map(|p| last.strip_suffix(p)) {
        let mut run = capitalised_run(std::iter::once(owner).chain(back));
        run.reverse();
        return (!run.is_empty()).then(|| name_key(&run.join(" ")));
    }
    None
}

/// Who `text` says the work `name` is made by wherever it says, if every such place
/// agrees.
fn maker_in(text: &str, name: &str, person: Option<&str>) -> Option<String> {
    agreed(text, name, |at| maker_at(text, at, name, person))
}

/// The first year of a span of years, "266–420".
fn span_start(span: &str) -> Option<&str> {
    let (from, to) = span.split_once(['–', '-'])?;
    year(to.trim())?;
    year(from.trim())
}

/// The year `text` dates `name` by wherever it dates it, if every such place agrees.
fn year_in(text: &str, name: &str, dating: Dating) -> Option<String> {
    agreed(text, name, |at| year_at(text, at, name, dating)).map(str::to_owned)
}

/// The name as the text writes it, without a leading "the" or a possessive.
pub(super) fn bare(text: &str) -> &str {
    let text = text.trim();
    let text = ["the ", "The "]
        .iter()
        .find_map(|a| text.strip_prefix(a))
        .unwrap_or(text);
    ["'s", "’s", "'", "’"]
        .iter()
        .find_map(|p| text.strip_suffix(p))
        .unwrap_or(text)
}

/// The year and the maker of mention `m` (not a person's), read after its title and kind
/// (`d`), from its title's qualifier first, else its document `text`; `people` are each
/// document's people, for "His David" in the summary of a person.
fn dated_and_made(
    d: &mut Described,
    m: &Mention<'_>,
    name: &str,
    text: Option<&str>,
    people: &std::collections::HashSet<(&str, &str)>,
) {
    let qualifier = d.title.as_deref().and_then(|t| super::qualifier(Some(t)));
    if m.entity_type == EntityType::Work {
        d.maker = qualifier.and_then(qualifier_maker).or_else(|| {
            let subject = m
                .title
                .map(|t| name_key(relata_core::names::unqualified_title(t).0));
            let person = subject.filter(|k| people.contains(&(m.document, k.as_str())));
            text.and_then(|t| maker_in(t, name, person.as_deref()))
        });
    }
    let dating = match m.entity_type {
        EntityType::Event => Dating::Event,
        EntityType::Work => Dating::Work,
        _ => Dating::Span,
    };
    // A title qualified by a span of years dates what it names (unless the mention is
    // another thing than the title's), as the text would.
    d.year = qualifier
        .and_then(span_start)
        .map(str::to_owned)
        .or_else(|| text.and_then(|t| year_in(t, name, dating)));
}

/// What each of `mentions` (with their [`name_key`]s, `keys`) is described as by its
/// document (`text_of`) and title, with `in_text` the joins the in-text rules made among
/// them.
pub(super) fn describe<'t>(
    mentions: &[Mention<'_>],
    keys: &[String],
    text_of: impl Fn(&str) -> Option<&'t str>,
    in_text: &[Join],
) -> Vec<Described> {
    let mut out = vec![Described::default(); mentions.len()];
    for j in in_text {
        if !matches!(j.rule, JoinRule::AliasInText | JoinRule::ShortName) {
            continue;
        }
        for (short, long) in [(j.a, j.b), (j.b, j.a)] {
            if keys[long].len() > keys[short].len()
                && !keys[short].contains(' ')
                && out[short].longer.is_none()
            {
                out[short].longer = Some(keys[long].clone());
            }
        }
    }
    let mut kinds: HashMap<(&str, &str), Option<&'static str>> = HashMap::new();
    // Each document's people, for "His David" in the summary of a person.
    let people: std::collections::HashSet<(&str, &str)> = mentions
        .iter()
        .zip(keys)
        .filter(|(m, _)| m.entity_type == EntityType::Person)
        .map(|(m, k)| (m.document, k.as_str()))
        .collect();
    for (i, m) in mentions.iter().enumerate() {
        let d = &mut out[i];
        // A title's qualifier that is a kind: "Georgia (U.S. state)", "São Paulo (state)".
        let mut title_kind = None;
        if let Some(title) = m.title {
            let (name, qualified) = relata_core::names::unqualified_title(title);
            if qualified && name_key(name) == keys[i] {
                d.title = Some(title.trim().to_owned());
                title_kind = super::qualifier(Some(title))
                    .and_then(|q| q.rsplit(' ').next())
                    .and_then(kind_of);
            }
            let words: Vec<&str> = name
                .split_whitespace()
                .map(|w| w.trim_end_matches(','))
                .collect();
            let short = bare(m.text);
            if d.longer.is_none()
                && m.entity_type == EntityType::Person
                && !keys[i].contains(' ')
                && words.len() >= 2
                && (words.first() == Some(&short) || words.last() == Some(&short))
                // "The Buddha" is no longer name for "Buddha".
                && name_key(name) != keys[i]
            {
                d.longer = Some(name_key(name));
            }
        }
        if m.entity_type == EntityType::Person {
            continue;
        }
        // The title's qualifier first, the collection's own word for what the document is
        // about, unless the mention's own sentence calls it another kind: then it is
        // another thing than the document's ("Its capital is the municipality of São
        // Paulo" in "São Paulo (state)"). Else what the text calls the name, where every
        // sentence that calls it something agrees.
        let name = bare(m.text);
        let text = text_of(m.document);
        if let Some(titled) = title_kind {
            let own = text.and_then(|t| {
                let at = m.start + m.text.find(name)?;
                (t.get(at..at + name.len()) == Some(name)).then(|| kind_at(t, at, name))?
            });
            d.kind = Some(own.unwrap_or(titled).to_owned());
            if own.is_some_and(|o| o != titled) {
                d.title = None;
            }
        } else if let Some(text) = text {
            d.kind = kinds
                .entry((m.document, name))
                .or_insert_with(|| kind_in(text, name))
                .map(str::to_owned);
        }
        if d.kind.is_none() {
            // Else the kind the longer name it stands for ends in ("the Amazon" for
            // "Amazon rainforest"), in the singular: "United States" is no state.
            d.kind = d
                .longer
                .as_deref()
                .and_then(|l| l.rsplit(' ').next())
                .and_then(kind_word)
                .map(str::to_owned);
        }
        dated_and_made(d, m, name, text, &people);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_is_read_where_the_text_gives_one_and_only_there() {
        let k = |text: &str, name: &str| kind_in(text, name);
        assert_eq!(
            k(
                "Atlanta is the capital of the U.S. state of Georgia.",
                "Georgia"
            ),
            Some("state")
        );
        assert_eq!(
            k("Georgia is a country in the Caucasus.", "Georgia"),
            Some("country")
        );
        assert_eq!(
            k(
                "Its capital and largest city, Victoria, is far east.",
                "Victoria"
            ),
            Some("city")
        );
        assert_eq!(
            k("São Paulo is the capital city of the state.", "São Paulo"),
            Some("city")
        );
        assert_eq!(
            k("Japan is an island country in East Asia.", "Japan"),
            Some("country")
        );
        assert_eq!(k("Malta is a sovereign state.", "Malta"), Some("country"));
        assert_eq!(
            k("Georgia is a U.S. state in the Southeast.", "Georgia"),
            Some("state")
        );
        assert_eq!(
            k("India was a participating state in the Games.", "India"),
            None
        );
        // Inside a longer name, the kind is the longer name's.
        assert_eq!(
            k("Great Zimbabwe was a city in the hills.", "Zimbabwe"),
            None
        );
        assert_eq!(k("Vinson Massif is a mountain.", "Vinson"), None);
        // What the phrase is about is not the name after it.
        assert_eq!(
            k(
                "Tbilisi is the capital and largest city of Georgia.",
                "Georgia"
            ),
            None
        );
        assert_eq!(
            k(
                "Vancouver is in the Lower Mainland region of British Columbia.",
                "British Columbia"
            ),
            None
        );
        assert_eq!(k("Paris was the capital of the empire.", "Paris"), None);
        assert_eq!(k("It borders Georgia to the north.", "Georgia"), None);
        // A named province placed in a country; a name's tail.
        assert_eq!(
            k("Hefei is the capital of Anhui province, China.", "China"),
            None
        );
        assert_eq!(
            k(
                "The Great Wall of China is a series of fortifications.",
                "China"
            ),
            None
        );
        assert_eq!(k("The Kingdom of France was a state.", "France"), None);
        // Two kinds in one text: it says nothing.
        assert_eq!(
            k(
                "São Paulo is a city. The state of São Paulo is larger.",
                "São Paulo"
            ),
            None
        );
    }

    #[test]
    fn a_list_of_a_kind_and_a_kind_as_subject_give_it_and_an_adjective_does_not() {
        let k = |text: &str, name: &str| kind_in(text, name);
        let swamp = "Some of the largest swamps are along major rivers such as the Amazon, \
                     the Mississippi, and the Congo.";
        assert_eq!(k(swamp, "Amazon"), Some("river"));
        assert_eq!(k(swamp, "Congo"), Some("river"));
        assert_eq!(
            k(
                "It follows the Amazon and Ganges–Brahmaputra rivers.",
                "Amazon"
            ),
            Some("river")
        );
        assert_eq!(k("It is the largest Caribbean island.", "Caribbean"), None);
        assert_eq!(
            k(
                "It resisted neighbouring states such as Poland and Hungary.",
                "Hungary"
            ),
            None
        );
        assert_eq!(
            k(
                "It is known in Middle Eastern regions such as Cyprus.",
                "Cyprus"
            ),
            None
        );
        assert_eq!(
            k(
                "Covering the south of the country, Wallonia is French-speaking.",
                "Wallonia"
            ),
            None
        );
        assert_eq!(
            k(
                "Seville is the capital and largest city of Andalusia.",
                "Seville"
            ),
            Some("city")
        );
        assert_eq!(
            k(
                "Lima is the capital and largest city of Peru. It spans the province of Lima.",
                "Lima"
            ),
            None
        );
        assert_eq!(
            k(
                "It began in the Île-de-France and Picardy regions.",
                "France"
            ),
            None
        );
        assert_eq!(k("They live in the rainforests of Borneo.", "Borneo"), None);
        assert_eq!(
            k("Its most populous city is São Paulo.", "São Paulo"),
            Some("city")
        );
        assert_eq!(
            k("Its capital is the municipality of São Paulo.", "São Paulo"),
            Some("city")
        );
        // The list must be names up to this one, the subject's kind its own.
        assert_eq!(
            k(
                "Rivers such as the Amazon flow into seas near Brazil.",
                "Brazil"
            ),
            None
        );
        assert_eq!(k("The capital of the state is Atlanta.", "Atlanta"), None);
        assert_eq!(k("The river is Egypt's lifeline.", "Egypt"), None);
        assert_eq!(
            k(
                "It lies in the Canadian province of Newfoundland and Labrador.",
                "Newfoundland"
            ),
            None
        );
        assert_eq!(
            k("The Gambia is a country in West Africa.", "Gambia"),
            Some("country")
        );
        assert_eq!(k("It joins the Amazon and the sea.", "Amazon"), None);
    }

    #[test]
    fn a_short_name_has_the_kind_its_longer_name_ends_in() {
        // The text gives no kind of its own: a capitalised word after a name is part of
        // it, and a biome is no kind read.
        let text = "The Amazon Rainforest, also called Amazonia, or simply the Amazon, \
                    is a moist broadleaf biome.";
        let mentions = [
            Mention {
                document: "Amazon rainforest",
                title: Some("Amazon rainforest"),
                text: "Amazon Rainforest",
                start: 4,
                entity_type: EntityType::Location,
            },
            Mention {
                document: "Amazon rainforest",
                title: Some("Amazon rainforest"),
                text: "the Amazon",
                start: text.find("the Amazon,").unwrap(),
                entity_type: EntityType::Location,
            },
        ];
        let keys: Vec<String> = mentions.iter().map(|m| name_key(m.text)).collect();
        let joins = [Join {
            a: 0,
            b: 1,
            rule: JoinRule::AliasInText,
            evidence: None,
        }];
        assert_eq!(kind_in(text, "Amazon"), None);
        let d = describe(&mentions, &keys, |_| Some(text), &joins);
        assert_eq!(d[1].longer.as_deref(), Some("amazon rainforest"));
        assert_eq!(d[1].kind.as_deref(), Some("forest"));
    }

    #[test]
    fn a_year_in_the_names_own_phrase_dates_it() {
        let y = |text: &str, name: &str| year_in(text, name, Dating::Work);
        let name = "Treaty of Paris";
        assert_eq!(
            y(
                "It followed the principles of the 1856 Treaty of Paris.",
                name
            )
            .as_deref(),
            Some("1856")
        );
        assert_eq!(
            y(
                "It was annexed under the December 1898 Treaty of Paris.",
                name
            )
            .as_deref(),
            Some("1898")
        );
        assert_eq!(
            y(
                "It is associated with World War I (1914–1918).",
                "World War I"
            )
            .as_deref(),
            Some("1914")
        );
        assert_eq!(
            y("The Revolution of 1848 spread.", "Revolution").as_deref(),
            Some("1848")
        );
        assert_eq!(
            y("It was written as Frankenstein (1818).", "Frankenstein").as_deref(),
            Some("1818")
        );
        // An event's one year in parentheses may date a part of it.
        assert_eq!(
            year_in(
                "Since the end of World War II (1945).",
                "World War II",
                Dating::Event
            ),
            None
        );
        assert_eq!(
            year_in(
                "During World War II (1939–1945).",
                "World War II",
                Dating::Event
            )
            .as_deref(),
            Some("1939")
        );
        // A sentence that opens with its date and goes straight on to the name's phrase.
        assert_eq!(
            y(
                "War ended. In 1783, in the Treaty of Paris, it ended.",
                name
            )
            .as_deref(),
            Some("1783")
        );
        assert_eq!(
            y(
                "On September 3, 1783, in the Treaty of Paris, the British agreed.",
                name
            )
            .as_deref(),
            Some("1783")
        );
        // Anything else but a person: only a span of years in parentheses.
        let span = |text: &str, name: &str| year_in(text, name, Dating::Span);
        assert_eq!(
            span(
                "It fragmented from the Jin dynasty (266–420) on.",
                "Jin dynasty"
            )
            .as_deref(),
            Some("266")
        );
        assert_eq!(span("The 1115 Jin dynasty ruled.", "Jin dynasty"), None);
        assert_eq!(span("Austria (1955) was neutral.", "Austria"), None);
        assert_eq!(span("Prussia (1701– ) was a kingdom.", "Prussia"), None);
        assert_eq!(span_start("266–420"), Some("266"));
        assert_eq!(span_start("Michelangelo"), None);
        // A year that dates the sentence or another phrase, a figure, or two dates:
        // nothing.
        assert_eq!(
            y("In 1919, after the Treaty of Paris, it ended.", name),
            None
        );
        assert_eq!(
            y("It was. In 1783, in Europe, in the Treaty of Paris.", name),
            None
        );
        assert_eq!(
            y("Then in 1783, in the Treaty of Paris, it ended.", name),
            None
        );
        assert_eq!(y("The Treaty of Paris (10 articles) ended it.", name), None);
        assert_eq!(y("It sold 1856 Treaty of Paris copies.", name), None);
        assert_eq!(
            y(
                "The 1783 Treaty of Paris and the 1898 Treaty of Paris.",
                name
            ),
            None
        );
    }

    #[test]
    fn a_work_is_made_by_whom_its_own_phrase_or_title_says() {
        let by = |text: &str, name: &str, person: Option<&str>| maker_in(text, name, person);
        assert_eq!(
            by("It is Michelangelo's David.", "David", None).as_deref(),
            Some("michelangelo")
        );
        assert_eq!(
            by(
                "He carved. His David was bronze.",
                "David",
                Some("donatello")
            )
            .as_deref(),
            Some("donatello")
        );
        // "His" in a summary that is not a person's says nothing.
        assert_eq!(by("His David was bronze.", "David", None), None);
        // A capitalised word that opens the sentence is not the maker's name.
        assert_eq!(
            by("In Rodin's Thinker, a man sits.", "Thinker", None).as_deref(),
            Some("rodin")
        );
        // "by" is left unread: "the bombing of Guernica by German warplanes".
        assert_eq!(
            by(
                "The bombing of Guernica by German planes.",
                "Guernica",
                None
            ),
            None
        );
        // Two makers: nothing.
        assert_eq!(
            by("Rodin's Thinker and Ono's Thinker.", "Thinker", None),
            None
        );
        assert_eq!(
            qualifier_maker("Michelangelo").as_deref(),
            Some("michelangelo")
        );
        assert_eq!(
            qualifier_maker("John Lennon song").as_deref(),
            Some("john lennon")
        );
        assert_eq!(qualifier_maker("1997 film"), None);
        assert_eq!(qualifier_maker("novel"), None);
    }

    #[test]
    fn longer_names_that_one_name_writes_shorter_agree() {
        assert!(one_name(
            "franklin d roosevelt",
            "franklin delano roosevelt"
        ));
        assert!(one_name(
            "soviet union",
            "union of soviet socialist republics"
        ));
        assert!(one_name("charles darwin", "charles robert darwin"));
        assert!(!one_name("theodore roosevelt", "franklin d. roosevelt"));
        assert!(!one_name(
            "international cricket council",
            "international criminal court"
        ));
        assert!(!one_name("blood pressure", "before present"));
    }
}
