//! Which name a sentence that refers back most likely refers to: the hint `extract-p5`
//! shows beside such a sentence, so a small model that copies sentences can write the
//! name where the sentence says "It" or "The film".
//!
//! A hint is a suggestion to the model, never a decision: the gate judges every statement
//! against its sentence and the names the chunk gives before it, whatever the hint said,
//! and the hint's own precision is read by hand (BENCHMARKS.md §3d).
//!
//! The reading is deliberately narrow, because a wrong hint can make a false statement
//! that reads well ("The musician plays …" hinted with "Accordion"). A sentence refers
//! back when it opens with a neuter pronoun ("It", "Its", "They", "Their"), or
//! with a demonstrative or "The" followed by a lowercase word ("The film") and no name
//! among its first [`OPENING_WORDS`] words. Its referent is what the sentence before is
//! about: the document's title when that sentence names it (a summary's "It" is nearly
//! always its topic), or else the name that sentence opens with (one of the chunk's names,
//! [`crate::names::candidates`]; "Located in Theodore Roosevelt Park, the museum …" opens
//! with none); when the sentence before refers back itself, its referent carries over ("It
//! was … . It reached …"). A phrase is hinted only when its
//! noun repeats one of the sentence that gave the name ("… is a 1968 film. The film
//! stars …"): "This method", "The musician", "The best-known" get no hint. The first
//! sentence has none.

use crate::names::find_word;

/// Pronouns that, opening a sentence, stand for something named before. Not "he", "she",
/// "his", "her": in a summary about a work they stand for its author or hero, whom the
/// sentence before need not name first ("The Duino Elegies are … by Rainer Maria Rilke.
/// He was then …").
const PRONOUNS: &[&str] = &["it", "its", "they", "their", "them"];

/// Determiners that, followed by a lowercase word, open a phrase that may stand for a
/// name given before ("This method", "The film").
const DETERMINERS: &[&str] = &["the", "this", "these", "that", "those"];

/// A sentence opening with a determiner refers back only when no name occurs among its
/// first this many words ("The director Stanley Kubrick" names its own thing; "The film
/// stars Keir Dullea" does not).
pub const OPENING_WORDS: usize = 3;

/// How a sentence refers back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// "It", "Their", …
    Pronoun,
    /// A determiner and this lowercase noun ("The film": `film`).
    Phrase(String),
}

/// Each of a chunk's sentences (`spans`) as `extract-p7` shows it and its gate reads a
/// claim whose statement is `null` ("the sentence as shown"): line breaks flattened, and
/// an opening "It", "Its", "They" or "Their" replaced by the name [`hints`] gives, with
/// `names`, the chunk's as [`crate::names::candidates`] reads them with `title`; so is an
/// opening phrase ("The film stars …") whose noun an earlier sentence gave as what the
/// named thing is, and which a verb or a comma shows to be the whole subject. The
/// prompt and the gate both call this, so what the model was shown is what is judged and
/// stored.
pub fn shown(
    text: &str,
    title: Option<&str>,
    spans: &[(usize, usize)],
    names: &[String],
) -> Vec<String> {
    shown_with_names(text, title, spans, names)
        .into_iter()
        .map(|(shown, _)| shown)
        .collect()
}

/// [`shown`], each sentence with the name written into it, when one was, and the index of
/// the sentence that gave that name ([`referents`]): a sentence shown with a name must be
/// read with that name, as the prompt showed it.
pub fn shown_with_names(
    text: &str,
    title: Option<&str>,
    spans: &[(usize, usize)],
    names: &[String],
) -> Vec<(String, Option<(String, usize)>)> {
    referents(text, title, spans, names)
        .into_iter()
        .zip(spans)
        .enumerate()
        .map(|(k, (referent, &(s, e)))| {
            let flat = text[s..e].split_whitespace().collect::<Vec<_>>().join(" ");
            let Some((name, from)) = referent else {
                return (flat, None);
            };
            if let Some(shown) = written_in(&flat, &name) {
                return (shown, Some((name, from)));
            }
            // A phrase is written as the name only where an earlier sentence says the
            // named thing is one ("… is a 1968 epic science fiction film. The film
            // stars …"): a noun that merely occurred before ("… from coca leaves. The
            // leaves are processed …") stands for something else. A name the text
            // writes in lowercase ("a concert, known as …") is a common noun, and "The
            // performance may …" already reads as well as it can.
            let before = &spans[..k];
            let proper = name.starts_with(|c: char| !c.is_lowercase());
            match reference(&flat, names) {
                Some(Reference::Phrase(noun))
                    if proper && is_class_of(text, before, &name, &noun) =>
                {
                    match phrase_written_in(&flat, &noun, &name) {
                        Some(shown) => (shown, Some((name, from))),
                        None => (flat, None),
                    }
                }
                _ => (flat, None),
            }
        })
        .collect()
}

/// Words after a copula that end the predicate's noun phrase ("a series of …", "a
/// tropane alkaloid that …").
const PHRASE_ENDS: &[&str] = &[
    "of", "in", "on", "at", "by", "for", "from", "with", "that", "which", "who", "whose", "and",
    "or", "to", "as",
];

/// Finite verbs that may follow a phrase's noun for it to be the whole of the sentence's
/// subject ("The film stars …", "The play is set …"); anything else may continue the
/// noun phrase ("The film industry …") and is not rewritten.
const AFTER_PHRASE: &[&str] = &[
    "is",
    "are",
    "was",
    "were",
    "has",
    "have",
    "had",
    "remains",
    "remained",
    "became",
    "becomes",
    "can",
    "could",
    "will",
    "would",
    "may",
    "might",
    "must",
    "should",
    "stars",
    "follows",
    "tells",
    "depicts",
    "features",
    "describes",
    "contains",
    "consists",
    "includes",
    "covers",
    "concerns",
    "focuses",
    "uses",
];

/// Whether one of the sentences `before` (byte ranges of `text`) says that `name` is a
/// `noun`: the name, a copula within the next twenty words, and the noun (singular or
/// plural) among the first words of the predicate ("A Doll's House (Danish: …) is a
/// three-act play in prose"); or the noun is the name's last word ("The crisis" for
/// "2008 financial crisis"). A noun that is the whole name ("The actor" for "Actor") is
/// a generic reading, and not written in.
fn is_class_of(text: &str, before: &[(usize, usize)], name: &str, noun: &str) -> bool {
    // One word read as `has_word` reads a sentence: punctuation split off, singular or
    // plural.
    let same = |w: &str| has_word(&w.to_lowercase(), noun);
    let name_words: Vec<&str> = name.split_whitespace().collect();
    if name_words.len() == 1 {
        if same(name) {
            return false;
        }
    } else if name_words.last().is_some_and(|w| same(w)) {
        return true;
    }
    before.iter().any(|&(s, e)| {
        let sentence = &text[s..e];
        let Some(at) = find_word(sentence, name) else {
            return false;
        };
        let words: Vec<&str> = sentence[at + name.len()..].split_whitespace().collect();
        let Some(copula) = words
            .iter()
            .take(20)
            .position(|w| matches!(*w, "is" | "was" | "are" | "were"))
        else {
            return false;
        };
        words[copula + 1..]
            .iter()
            .take(8)
            .take_while(|w| !PHRASE_ENDS.contains(w))
            .any(|w| same(w))
    })
}

/// `sentence` with its opening phrase ("The film", "This play") written as `name`, when
/// what follows the noun shows the phrase is the whole subject: a comma or one of
/// [`AFTER_PHRASE`].
fn phrase_written_in(sentence: &str, noun: &str, name: &str) -> Option<String> {
    let mut words = sentence.splitn(3, ' ');
    let (_determiner, said, rest) = (words.next()?, words.next()?, words.next()?);
    if let Some(bare) = said.strip_suffix(',') {
        return (bare == noun).then(|| format!("{name}, {rest}"));
    }
    let next = rest.split_whitespace().next()?;
    (said == noun && AFTER_PHRASE.contains(&next)).then(|| format!("{name} {rest}"))
}

/// The referent hints for a chunk's sentences (`spans`, as byte ranges of `text`),
/// given the chunk's names: for each sentence, the name it most likely refers back to,
/// or `None`.
pub fn hints(
    text: &str,
    title: Option<&str>,
    spans: &[(usize, usize)],
    names: &[String],
) -> Vec<Option<String>> {
    referents(text, title, spans, names)
        .into_iter()
        .map(|r| r.map(|(name, _)| name))
        .collect()
}

/// [`hints`], each with the index of the sentence that gave its name (the one before, or
/// further back when the sentences between refer back too): what the gate reads a
/// sentence whose name [`shown`] wrote in with, and how far back its quote reaches.
pub fn referents(
    text: &str,
    title: Option<&str>,
    spans: &[(usize, usize)],
    names: &[String],
) -> Vec<Option<(String, usize)>> {
    let title = title.and_then(|t| crate::names::title_in(text, t));
    let sentence = |k: usize| &text[spans[k].0..spans[k].1];
    // Per sentence: the name its reference most likely stands for, and the sentence
    // whose opening gave that name; a hint shows it only where the reading is sure enough.
    let mut chain: Vec<Option<(String, usize)>> = Vec::with_capacity(spans.len());
    let mut out = Vec::with_capacity(spans.len());
    let mut before_refers = false;
    for k in 0..spans.len() {
        let reference = reference(sentence(k), names);
        let referent = match (k.checked_sub(1), &reference) {
            (None, _) | (_, None) => None,
            // The sentence before refers back itself: what it opens with is not a name.
            (Some(p), Some(_)) if before_refers => chain[p].clone(),
            (Some(p), Some(_)) => opening_name(text, sentence(p), title, names).map(|n| (n, p)),
        };
        // A phrase stands for the name only when its noun repeats one said of it.
        let sure = referent.as_ref().is_some_and(|(_, from)| match &reference {
            Some(Reference::Phrase(noun)) => {
                has_word(sentence(*from), noun) || has_word(sentence(k - 1), noun)
            }
            _ => true,
        });
        out.push(referent.clone().filter(|_| sure));
        chain.push(referent);
        before_refers = reference.is_some();
    }
    out
}

/// `sentence` with its opening pronoun written as `name` ("It tells …" → "Alice's
/// Adventures in Wonderland tells …"; "Its plot …" → "2001: A Space Odyssey's plot …"),
/// when it opens with one; a phrase ("The film") is not rewritten, since what follows its
/// noun may belong to it ("The text of the Gospels").
pub fn written_in(sentence: &str, name: &str) -> Option<String> {
    let trimmed = sentence.trim_start();
    let end = trimmed
        .find(|c: char| !c.is_alphanumeric())
        .unwrap_or(trimmed.len());
    let (first, rest) = trimmed.split_at(end);
    match first.to_lowercase().as_str() {
        "it" | "they" | "them" => Some(format!("{name}{rest}")),
        "its" | "their" => Some(format!("{name}'s{rest}")),
        _ => None,
    }
}

/// How `sentence` opens with a reference back, if it does (see the module docs).
pub fn reference(sentence: &str, names: &[String]) -> Option<Reference> {
    let words: Vec<&str> = sentence
        .split_whitespace()
        .take(OPENING_WORDS)
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .collect();
    let first = words.first()?.to_lowercase();
    if PRONOUNS.contains(&first.as_str()) {
        return Some(Reference::Pronoun);
    }
    let noun = words.get(1).filter(|w| {
        DETERMINERS.contains(&first.as_str()) && w.chars().next().is_some_and(char::is_lowercase)
    })?;
    let opening_end = sentence
        .split_whitespace()
        .take(OPENING_WORDS)
        .map(|w| w.len() + 1)
        .sum::<usize>();
    let named = names
        .iter()
        .any(|n| find_word(sentence, n).is_some_and(|at| at < opening_end));
    (!named).then(|| Reference::Phrase((*noun).to_owned()))
}

/// Whether `sentence` has `noun` as a lowercase word, singular or plural.
fn has_word(sentence: &str, noun: &str) -> bool {
    let stem = noun.strip_suffix('s').unwrap_or(noun);
    sentence
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .any(|w| w == noun || w == stem || w.strip_suffix('s') == Some(stem))
}

/// The name `sentence` is about: the document's title when it names it, or else the name
/// it opens with (after "The" or "A" at most), the longest where two start there.
fn opening_name(
    text: &str,
    sentence: &str,
    title: Option<&str>,
    names: &[String],
) -> Option<String> {
    if let Some(t) = title.filter(|t| find_word(sentence, t).is_some()) {
        return Some(t.to_owned());
    }
    let lead = ["The ", "A ", "An "]
        .iter()
        .find(|a| sentence.starts_with(*a))
        .map_or(0, |a| a.len());
    names
        .iter()
        .filter(|n| find_word(sentence, n) == Some(lead))
        .max_by_key(|n| n.len())
        // One capitalised word opening a sentence is a name only when the chunk writes it
        // capitalised elsewhere too ("Often considered …", "Sound is produced …" are not).
        .filter(|n| n.contains(' ') || lead > 0 || capitalised_inside(text, n))
        .cloned()
}

/// Whether `text` has `word` capitalised somewhere other than at a sentence's start.
fn capitalised_inside(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].trim_end();
        at > 0
            && !before.is_empty()
            && !before.ends_with(['.', '!', '?', '"', '\u{201d}'])
            && !text[..at].ends_with(|c: char| c.is_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hinted(text: &str, title: Option<&str>) -> Vec<Option<String>> {
        let spans = crate::sentences::handled(text);
        let names = crate::names::candidates(text, title);
        hints(text, title, &spans, &names)
    }

    #[test]
    fn a_pronoun_refers_to_the_name_the_sentence_before_opens_with() {
        let text = "The Harbor Bridge is a suspension bridge in Norland. \
                    It was designed by the engineer Maria Lindqvist. \
                    Its main span is 400 metres long.";
        assert_eq!(
            hinted(text, None),
            vec![
                None,
                Some("Harbor Bridge".to_owned()),
                Some("Harbor Bridge".to_owned())
            ]
        );
    }

    #[test]
    fn a_definite_phrase_refers_back_only_without_a_name_in_its_opening() {
        let text = "2001: A Space Odyssey is a 1968 epic science fiction film. \
                    The film stars Keir Dullea and Gary Lockwood. \
                    The director Stanley Kubrick was praised by critics for years. \
                    The Lisbon earthquake struck the city in the year 1755.";
        let h = hinted(text, Some("2001: A Space Odyssey (film)"));
        assert_eq!(h[1].as_deref(), Some("2001: A Space Odyssey"));
        assert_eq!(h[2], None, "a name in the opening: not a reference");
        assert_eq!(h[3], None, "a capitalised word after \"The\": a name");
    }

    #[test]
    fn a_phrase_whose_noun_was_not_said_of_the_name_gets_no_hint() {
        let text = "Academic art is a style of painting produced under European academies. \
                    This method extended its influence throughout the Western world. \
                    The musician normally plays the melody on the right-hand side.";
        assert_eq!(hinted(text, Some("Academic art")), vec![None, None, None]);
        // ... though a pronoun after such a phrase still stands for the name.
        let text = "Academic art is a style of painting produced under European academies. \
                    This method extended its influence throughout the Western world. \
                    It reached its apogee in the 19th century after the wars.";
        let h = hinted(text, Some("Academic art"));
        assert_eq!(h[2].as_deref(), Some("Academic art"));
    }

    #[test]
    fn a_sentence_that_names_its_subject_and_the_first_sentence_have_no_hint() {
        let text = "It is a city on a river with a long history. \
                    Lisbon is the capital of Portugal and its largest city.";
        assert_eq!(hinted(text, None), vec![None, None]);
    }

    #[test]
    fn a_personal_pronoun_and_a_capitalised_opener_get_no_hint() {
        let text = "The Duino Elegies are ten elegies written by Rainer Maria Rilke. \
                    He was then widely recognized as a lyrical poet. \
                    Sound is produced by rolling both lips over the reed. \
                    Its fingering system can be quite complex for beginners.";
        assert_eq!(hinted(text, Some("Duino Elegies")), vec![None; 4]);
    }

    #[test]
    fn only_an_opening_pronoun_is_written_as_the_name() {
        assert_eq!(
            written_in("It opened in 1932.", "Harbor Bridge").as_deref(),
            Some("Harbor Bridge opened in 1932.")
        );
        assert_eq!(
            written_in("Its main span is long.", "Harbor Bridge").as_deref(),
            Some("Harbor Bridge's main span is long.")
        );
        assert_eq!(written_in("The film stars Keir Dullea.", "2001"), None);
        assert_eq!(written_in("Itself a bridge, it spans a river.", "X"), None);
    }

    #[test]
    fn a_sentence_is_shown_flat_with_its_opening_pronoun_written_as_the_name() {
        let text = "The Harbor Bridge is a suspension bridge\nin Norland. \
                    It was designed by the engineer Maria Lindqvist. \
                    The film stars Keir Dullea and Gary Lockwood.";
        let spans = crate::sentences::handled(text);
        assert_eq!(
            shown(text, None, &spans, &crate::names::candidates(text, None)),
            [
                "The Harbor Bridge is a suspension bridge in Norland.",
                "Harbor Bridge was designed by the engineer Maria Lindqvist.",
                "The film stars Keir Dullea and Gary Lockwood.",
            ]
        );
    }

    #[test]
    fn a_phrase_is_written_as_the_name_only_for_what_the_name_was_said_to_be() {
        let show = |text: &str, title: &str| {
            let spans = crate::sentences::handled(text);
            let names = crate::names::candidates(text, Some(title));
            shown(text, Some(title), &spans, &names)
        };
        let text = "2001: A Space Odyssey is a 1968 epic science fiction film by Stanley Kubrick. \
                    The film stars Keir Dullea and Gary Lockwood.";
        let s = show(text, "2001: A Space Odyssey");
        assert_eq!(
            s[1],
            "2001: A Space Odyssey stars Keir Dullea and Gary Lockwood."
        );
        // The noun occurred before, but not as what the named thing is.
        let text = "Cocaine is a tropane alkaloid that is made from coca leaves. \
                    The leaves are processed into cocaine paste.";
        assert_eq!(
            show(text, "Cocaine")[1],
            "The leaves are processed into cocaine paste."
        );
        // The noun may continue a longer phrase; the generic reading of a one-word title.
        let text = "Casablanca is a 1942 American film by Michael Curtiz. \
                    The film industry of the time favoured such stories. \
                    The actor Humphrey Bogart is its star.";
        assert_eq!(
            show(text, "Casablanca")[1],
            "The film industry of the time favoured such stories."
        );
        let text = "A concert is a live performance of music in front of an audience. \
                    The performance may be carried by a single musician.";
        assert_eq!(
            show(text, "Concert")[1],
            "The performance may be carried by a single musician."
        );
        let text = "An actor is a person who portrays a character in a production. \
                    The actor performs in the flesh in the theatre.";
        assert_eq!(
            show(text, "Actor")[1],
            "The actor performs in the flesh in the theatre."
        );
        // The name's own head noun.
        let text = "The 2008 financial crisis was a severe worldwide economic crisis. \
                    The crisis was followed by the Great Recession.";
        assert_eq!(
            show(text, "2008 financial crisis")[1],
            "2008 financial crisis was followed by the Great Recession."
        );
    }

    #[test]
    fn no_name_before_gives_no_hint() {
        let text = "there are many bridges over the river in the city. \
                    They were built in the nineteenth century by the town.";
        assert_eq!(hinted(text, None), vec![None, None]);
    }
}
