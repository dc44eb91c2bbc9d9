//! Whether the retrieved passages can answer a question at all, decided by relata before
//! the model is asked.
//!
//! Retrieval ranks with OR semantics, so a question about something the store does not
//! hold still finds passages ("Who painted the Mona Lisa?" finds a page about another
//! painter), and a small model then answers from them. The test here is deliberately
//! narrow: every name the question uses (a run of capitalised words after its first word)
//! and every figure in it must occur in some passage (its title or its text). A name the
//! sources never mention cannot be answered from them. Questions whose names are all
//! there still go to the model, which may abstain; this only spares it the ones that
//! cannot be answered.

/// Words that open or join questions and are capitalised for no other reason.
const NOT_NAMES: &[&str] = &[
    "what",
    "who",
    "when",
    "which",
    "how",
    "where",
    "why",
    "is",
    "are",
    "was",
    "were",
    "did",
    "does",
    "do",
    "in",
    "on",
    "at",
    "the",
    "a",
    "an",
    "of",
    "for",
    "to",
    "by",
    "from",
    "i",
    "has",
    "have",
    "had",
    "can",
    "could",
    "would",
    "should",
    "whose",
    "whom",
    "name",
    "list",
    "tell",
    "give",
    "according",
    "after",
    "before",
    "during",
    "about",
    "since",
    "per",
];

/// Lowercase words that may sit inside a name between capitalised ones ("Bay of Bengal",
/// "Leonardo da Vinci"); they are not required to be found.
const JOINERS: &[&str] = &[
    "of", "de", "the", "von", "van", "da", "del", "la", "le", "di",
];

/// The question's words, with their punctuation trimmed (`Jackson's` stays one word).
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '\'' | '’' | '.' | '-')))
        .map(|w| w.trim_matches(|c: char| matches!(c, '.' | '\'' | '’' | '-')))
        .filter(|w| !w.is_empty())
        .collect()
}

fn capitalised(w: &str) -> bool {
    w.chars().next().is_some_and(char::is_uppercase)
}

/// The names a question uses: runs of capitalised words after the first word, joined by
/// [`JOINERS`].
pub fn names(question: &str) -> Vec<Vec<&str>> {
    let ws = words(question);
    let mut out = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        let lower = w.to_lowercase();
        let name_word = i > 0 && capitalised(w) && !NOT_NAMES.contains(&lower.as_str());
        let joiner = !run.is_empty()
            && JOINERS.contains(&lower.as_str())
            && ws.get(i + 1).is_some_and(|n| capitalised(n));
        if name_word || joiner {
            run.push(w);
        } else if !run.is_empty() {
            out.push(std::mem::take(&mut run));
        }
    }
    if !run.is_empty() {
        out.push(run);
    }
    out
}

/// The figures a question uses (`1994`, `3.7`).
fn figures(question: &str) -> Vec<&str> {
    words(question)
        .into_iter()
        .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_digit()))
        .collect()
}

/// The word without a possessive ending, lowercased: what a passage must contain.
fn stem(w: &str) -> String {
    let w = w.to_lowercase().replace('’', "'");
    w.strip_suffix("'s").map(str::to_owned).unwrap_or(w)
}

/// True when `text` has a word beginning with `prefix` ("Curie" finds "Curie's").
pub(crate) fn has_word_starting(text: &str, prefix: &str) -> bool {
    text.match_indices(prefix).any(|(at, _)| {
        text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric())
    })
}

/// The words of the names a question uses, as a passage must contain them: lowercased,
/// without a possessive ending, joiners left out ("Bay of Bengal" → "bay", "bengal").
pub(crate) fn name_words(question: &str) -> Vec<String> {
    names(question)
        .into_iter()
        .flatten()
        .filter(|w| !JOINERS.contains(&w.to_lowercase().as_str()))
        .map(stem)
        .collect()
}

/// True when `text` has a word beginning with `w`, or, for a word of a people ("Korean",
/// "Russian"), the place's name as a whole word ("Korea", "Russia"): "How far is
/// Vladivostok from the North Korean border?" is answered by "… the border with North
/// Korea".
fn mentions_word(text: &str, w: &str) -> bool {
    has_word_starting(text, w)
        || w.strip_suffix('n')
            .filter(|place| place.ends_with('a') && place.chars().count() >= 4)
            .is_some_and(|place| has_phrase(text, place))
}

/// True when `phrase` occurs in `text` between word boundaries ("korea" in "north
/// korea.", not in "koreas").
pub(crate) fn has_phrase(text: &str, phrase: &str) -> bool {
    text.match_indices(phrase).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + phrase.len()..].chars().next();
        before.is_none_or(|c| !c.is_alphanumeric()) && after.is_none_or(|c| !c.is_alphanumeric())
    })
}

/// [`unmentioned`] over retrieved passages, each read with its document's title.
pub fn unmentioned_in(question: &str, passages: &[relata_store::Passage]) -> Vec<String> {
    let texts: Vec<String> = passages
        .iter()
        .map(|p| format!("{}\n{}", p.title.as_deref().unwrap_or(""), p.text))
        .collect();
    unmentioned(question, &texts)
}

/// What the question names that no passage mentions: each name (all its words in one
/// passage) and each figure, in the question's order. Empty when the passages may answer.
pub fn unmentioned(question: &str, passages: &[String]) -> Vec<String> {
    let lowered: Vec<String> = passages
        .iter()
        .map(|p| p.to_lowercase().replace('’', "'"))
        .collect();
    let mut missing = Vec::new();
    for name in names(question) {
        let required: Vec<String> = name
            .iter()
            .filter(|w| !JOINERS.contains(&w.to_lowercase().as_str()))
            .map(|w| stem(w))
            .collect();
        let found = lowered
            .iter()
            .any(|p| required.iter().all(|w| mentions_word(p, w)));
        if !found {
            missing.push(name.join(" "));
        }
    }
    for figure in figures(question) {
        if !passages.iter().any(|p| p.contains(figure)) {
            missing.push(figure.to_owned());
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_capitalised_runs_after_the_first_word() {
        assert_eq!(
            names("Who composed the ballet Swan Lake?"),
            [vec!["Swan", "Lake"]]
        );
        assert_eq!(
            names("How many copies has Michael Jackson's album Thriller sold?"),
            [vec!["Michael", "Jackson's"], vec!["Thriller"]]
        );
        assert_eq!(
            names("Where does the Bay of Bengal end?"),
            [vec!["Bay", "of", "Bengal"]]
        );
        assert!(names("What is an accordionist?").is_empty());
        assert!(names("When was it built?").is_empty());
    }

    #[test]
    fn a_name_or_figure_no_passage_mentions_is_reported_and_one_that_is_is_not() {
        let passages = vec![
            "Leonardo da Vinci\nLeonardo painted many portraits in Florence.".to_owned(),
            "Poland\nMarie Curie's birthplace, Warsaw, was in Poland in 1867.".to_owned(),
        ];
        assert_eq!(
            unmentioned("Who painted the Mona Lisa?", &passages),
            ["Mona Lisa"]
        );
        assert!(unmentioned("Where was Marie Curie born?", &passages).is_empty());
        assert!(unmentioned("What did Curie do in 1867?", &passages).is_empty());
        assert_eq!(
            unmentioned("Who won the 1994 FIFA World Cup?", &passages),
            ["FIFA World Cup", "1994"]
        );
        // A name's words must be in one passage, each at a word's start.
        assert_eq!(
            unmentioned("Did Leonardo visit Warsaw?", &passages),
            Vec::<String>::new()
        );
        assert_eq!(
            unmentioned("Did Leonardo Curie exist?", &passages),
            ["Leonardo Curie"]
        );
        assert_eq!(unmentioned("Was Arsaw a city?", &passages), ["Arsaw"]);
    }

    #[test]
    fn a_word_of_a_people_finds_its_place_written_whole() {
        let passages =
            vec!["Vladivostok\nThe city lies near the border with North Korea.".to_owned()];
        assert!(
            unmentioned(
                "How far is Vladivostok from the North Korean border?",
                &passages
            )
            .is_empty()
        );
        assert_eq!(
            unmentioned("Is Vladivostok near the Russian border?", &passages),
            ["Russian"]
        );
        // Only the name itself, whole: "Bolivias" is not "Bolivia".
        let avenue = vec!["Bolivias Avenue runs through the city.".to_owned()];
        assert_eq!(unmentioned("Is it a Bolivian city?", &avenue), ["Bolivian"]);
    }
}
