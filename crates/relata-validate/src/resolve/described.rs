//! What a mention's own document says its name stands for, read so that
//! [`JoinRule::SameName`] does not join two things of one name across documents when
//! their documents tell them apart: two titles that qualify one name differently ("Jin
//! dynasty (266–420)", "Jin dynasty (1115–1234)"), two longer names a short one stands for
//! ("BP" for "Blood pressure" in one summary and for "Before Present" in another; "Lee"
//! in "Bruce Lee" and in "Ang Lee"), two kinds of place ("the state of Georgia", "Georgia is
//! a country"). A document that says nothing of the kind keeps every join it had: the
//! reading only ever withholds a join, never makes one.

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
    /// is a country", "Its capital and largest city, Victoria,").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
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
        self.title.is_none() && self.longer.is_none() && self.kind.is_none()
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
        None
    }

    /// Take what `other` says where `self` says nothing: a group of mentions is described
    /// by the first of its members that says each thing.
    pub fn absorb(&mut self, other: &Described) {
        for (mine, theirs) in [
            (&mut self.title, &other.title),
            (&mut self.longer, &other.longer),
            (&mut self.kind, &other.kind),
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
    let initial = |i: &str, w: &str| {
        i.strip_suffix('.')
            .is_some_and(|p| p.chars().count() <= 2 && !p.is_empty() && w.starts_with(p))
    };
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
];

fn kind_of(word: &str) -> Option<&'static str> {
    KINDS.iter().find(|(w, _)| *w == word).map(|(_, k)| *k)
}

/// Words that end the modifiers before a noun ("a country in …", "the capital of …").
const ENDS_PHRASE: &[&str] = &[
    "of", "in", "on", "at", "from", "by", "with", "for", "to", "and", "or", "that", "which", "who",
    "whose", "where",
];

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
    let mut words = text[..at]
        .strip_suffix(' ')
        .unwrap_or("")
        .split_whitespace()
        .rev();
    // "Great Zimbabwe", and a name's tail after a connector: "Great Wall of China",
    // "Kingdom of France", "Tour de France".
    let before = match words.next() {
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

/// The kind one occurrence of `name` at `at` in `text` is given: "the [U.S.] state of
/// NAME", "… city, NAME", or "NAME[,] is/was a/an/the [modifiers] KIND".
fn kind_at(text: &str, at: usize, name: &str) -> Option<&'static str> {
    if inside_longer_name(text, at, name) {
        return None;
    }
    let before: Vec<&str> = text[..at].split_whitespace().rev().take(6).collect();
    if before.first() == Some(&"of")
        && let Some(kind) = before.get(1).and_then(|w| kind_of(w))
    {
        let mut rest = before[2..].iter();
        let mut next = rest.next();
        for _ in 0..3 {
            if next.is_some_and(|w| proper_modifier(w)) {
                next = rest.next();
            }
        }
        if matches!(next, Some(&("the" | "The"))) {
            return Some(kind);
        }
    }
    // "… city, Victoria": an apposition, unless the kind is a named one's ("Zhejiang
    // province, China" places the province in China).
    if text[..at].ends_with(", ")
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
    for token in rest.split_whitespace().take(4) {
        let word = token.trim_end_matches([',', ';', ':', ')']);
        // An abbreviation keeps its full stop ("U.S."); a word that ends a sentence not.
        let word = match word.strip_suffix('.') {
            Some(w) if !w.contains('.') => w,
            _ => word,
        };
        let lowercase = word.chars().next().is_some_and(char::is_lowercase);
        if ENDS_PHRASE.contains(&word) || !(lowercase || proper_modifier(word)) {
            break;
        }
        if let Some(k) = kind_of(word) {
            // "A state" after a common word is mostly a polity's role ("a participating
            // state", "a member state"), not a federated state; a sovereign one is a
            // country.
            kind = match (k, previous) {
                ("state", Some("sovereign")) => Some("country"),
                ("state", Some(p)) if p.chars().next().is_some_and(char::is_lowercase) => None,
                _ => Some(k),
            };
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
    let mut found = None;
    let mut from = 0;
    while let Some(at) = relata_core::names::find_word(&text[from..], name).map(|i| i + from) {
        if let Some(k) = kind_at(text, at, name) {
            if found.is_some_and(|f| f != k) {
                return None;
            }
            found = Some(k);
        }
        from = at + name.len();
    }
    found
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
    for (i, m) in mentions.iter().enumerate() {
        let d = &mut out[i];
        // A title's qualifier that is a kind ("Georgia (U.S. state)", "São Paulo
        // (state)") gives the kind where the text gives none.
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
        if m.entity_type != EntityType::Person
            && let Some(text) = text_of(m.document)
        {
            let name = bare(m.text);
            d.kind = kinds
                .entry((m.document, name))
                .or_insert_with(|| kind_in(text, name))
                .map(str::to_owned);
        }
        if d.kind.is_none() && m.entity_type != EntityType::Person {
            d.kind = title_kind.map(str::to_owned);
        }
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
    fn longer_names_that_one_name_writes_shorter_agree() {
        assert!(one_name(
            "franklin d. roosevelt",
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
