//! Whether the sources hold the kind of figure a question asks for.
//!
//! "How tall is K2?" finds the K2 summary, so every name the question uses is mentioned
//! and [`crate::answerability::unmentioned`] lets it through; but if no sentence about K2
//! gives a length, the sources cannot answer it, and a small model shown them answers
//! from what they do say (or from what it knows). A question whose wording asks for a
//! figure of one kind — a year ("When …", "In what year …"), a length ("How tall",
//! "height"), an area, a temperature, a speed, a sum of money, a span of time, or a count
//! ("How many", "population") — is abstained on before the model is asked when no
//! sentence about its names, in any retrieved passage, holds a figure of that kind.
//!
//! The reading is deliberately wide on the passages' side and narrow on the question's:
//! a question is given a kind only by the phrases below, a sentence counts as about the
//! question's names when its passage's title or the sentence itself writes one of their
//! words, or when it opens by referring back ("It", "The film") to a sentence that is,
//! and any figure of the
//! kind counts, right or wrong. It spares the model questions the sources cannot answer;
//! whether a figure the sources give answers the question stays the model's and the
//! gate's to judge.

use crate::answerability::{self, has_phrase};

/// The kinds of figure a question can be read as asking for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FigureKind {
    Year,
    Length,
    Area,
    Temperature,
    Speed,
    Money,
    Duration,
    Count,
}

impl FigureKind {
    /// What the figure is, for a caveat's detail ("no sentence … gives a length").
    pub fn noun(self) -> &'static str {
        match self {
            FigureKind::Year => "a year",
            FigureKind::Length => "a length",
            FigureKind::Area => "an area",
            FigureKind::Temperature => "a temperature",
            FigureKind::Speed => "a speed",
            FigureKind::Money => "a sum of money",
            FigureKind::Duration => "a span of time",
            FigureKind::Count => "a number",
        }
    }
}

/// Phrases that open a question asking for a year.
const YEAR_OPENINGS: &[&str] = &[
    "when ",
    "in what year ",
    "in which year ",
    "what year ",
    "which year ",
];

/// For each kind but [`FigureKind::Year`] (and money asked "how much"), the phrases
/// that ask for it, read in this order: the first kind with a phrase in the question is
/// the kind asked for ("How many people live in the urban area of …" asks for a count,
/// not an area). A phrase after "at the" is an idiom, not a question ("At the height of
/// its power, …"). Phrases that also ask for no figure are left out: "How long did the
/// war last?" is answered "from 1939 to 1945", "What degree did she earn?" by a name.
const ASKING: &[(FigureKind, &[&str])] = &[
    (FigureKind::Speed, &["speed", "how fast"]),
    (
        FigureKind::Temperature,
        &[
            "boiling point",
            "melting point",
            "temperature",
            "how hot",
            "how cold",
        ],
    ),
    (FigureKind::Money, &["box office", "revenue", "grossed"]),
    (
        FigureKind::Duration,
        &["lifespan", "life span", "life expectancy"],
    ),
    (
        FigureKind::Length,
        &[
            "how tall",
            "how high",
            "how deep",
            "how far",
            "height",
            "elevation",
            "depth",
            "below sea level",
            "above sea level",
        ],
    ),
    (
        FigureKind::Count,
        &[
            "how many",
            "how much",
            "how old",
            "population",
            "number of",
            "percentage",
            "percent",
        ],
    ),
    (FigureKind::Area, &["surface area", "total area"]),
];

/// Verbs that, after "how much", ask for a sum of money.
const MONEY_VERBS: &[&str] = &[
    "cost", "costs", "earn", "earned", "gross", "pay", "paid", "raise", "raised", "sell for",
    "sold for", "worth",
];

/// Units that, after a number, make it a figure of a kind.
const LENGTH_UNITS: &[&str] = &[
    "m",
    "km",
    "cm",
    "mm",
    "ft",
    "feet",
    "foot",
    "metre",
    "metres",
    "meter",
    "meters",
    "kilometre",
    "kilometres",
    "kilometer",
    "kilometers",
    "mile",
    "miles",
    "mi",
    "inch",
    "inches",
    "yard",
    "yards",
    "light-year",
    "light-years",
    "ly",
    "au",
    "parsec",
    "parsecs",
    "nautical",
];
const AREA_UNITS: &[&str] = &[
    "km2", "km²", "mi2", "mi²", "m2", "m²", "sq", "square", "hectares", "hectare", "ha", "acres",
    "acre",
];
const TEMPERATURE_UNITS: &[&str] = &[
    "°",
    "°c",
    "°f",
    "°k",
    "c",
    "f",
    "k",
    "degrees",
    "degree",
    "kelvin",
    "celsius",
    "fahrenheit",
];
const MONEY_UNITS: &[&str] = &[
    "dollars", "dollar", "usd", "us$", "euros", "euro", "pounds", "yen", "francs", "marks",
    "rupees", "yuan",
];
const DURATION_UNITS: &[&str] = &[
    "years",
    "year",
    "months",
    "month",
    "weeks",
    "week",
    "days",
    "day",
    "hours",
    "hour",
    "decades",
    "centuries",
];
const SCALES: &[&str] = &["million", "billion", "trillion", "thousand", "hundred"];

/// Number words beyond the whole numbers up to twenty ([`relata_validate::SPELLED_NUMBERS`])
/// that are a count or a span ("thirty years", "hundreds of species").
const SPELLED_MORE: &[&str] = &[
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
    "hundred",
    "hundreds",
    "thousand",
    "thousands",
    "million",
    "millions",
    "billion",
    "billions",
    "dozen",
    "dozens",
];

/// Words that, opening a sentence, refer back to what its passage is about.
const REFERRING: &[&str] = &[
    "it", "its", "they", "their", "this", "these", "those", "he", "she", "his", "her",
];

/// The kind of figure `question` asks for, when its wording says.
pub fn asked(question: &str) -> Option<FigureKind> {
    let q = question.trim().to_lowercase().replace('’', "'");
    if YEAR_OPENINGS.iter().any(|o| q.starts_with(o)) {
        return Some(FigureKind::Year);
    }
    // "How much did it cost?" asks for money; "What degree did she earn?" does not.
    if has_phrase(&q, "how much") && MONEY_VERBS.iter().any(|v| has_phrase(&q, v)) {
        return Some(FigureKind::Money);
    }
    ASKING
        .iter()
        .find(|(_, phrases)| {
            phrases
                .iter()
                .any(|p| has_phrase(&q, p) && !has_phrase(&q, &format!("at the {p}")))
        })
        .map(|(kind, _)| *kind)
}

/// A sentence's words, lowercased, each split into its leading number and the rest
/// ("8,611-metre" → "8,611", "metre"; "28,251ft" → "28,251", "ft"), with the punctuation
/// around them trimmed.
fn tokens(sentence: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in sentence.split_whitespace() {
        let w = raw
            .trim_matches(|c: char| {
                matches!(
                    c,
                    ',' | '.' | ';' | ':' | '(' | ')' | '[' | ']' | '"' | '\''
                )
            })
            .to_lowercase();
        let digits_end = w
            .char_indices()
            .find(|(_, c)| !(c.is_ascii_digit() || matches!(c, ',' | '.')))
            .map_or(w.len(), |(i, _)| i);
        let leads_with_digit = w.starts_with(|c: char| c.is_ascii_digit());
        if leads_with_digit && digits_end < w.len() {
            let (number, rest) = w.split_at(digits_end);
            out.push(number.trim_end_matches([',', '.']).to_owned());
            let rest = rest.trim_start_matches(['-', '–']);
            if !rest.is_empty() {
                out.push(rest.to_owned());
            }
        } else {
            out.push(w);
        }
    }
    out
}

/// A number written in digits, after any sign or currency symbol ("−185.8", "$1.2",
/// "US$1,000").
fn number(token: &str) -> Option<&str> {
    let t = token.strip_prefix("us").unwrap_or(token);
    let t = t.trim_start_matches(['$', '€', '£', '¥', '−', '-', '~', '≈', '+']);
    t.starts_with(|c: char| c.is_ascii_digit()).then_some(t)
}

/// True when `sentence` holds a figure of `kind`.
fn holds(sentence: &str, kind: FigureKind) -> bool {
    let ts = tokens(sentence);
    let unit_after = |i: usize, units: &[&str]| {
        let mut j = i + 1;
        while ts.get(j).is_some_and(|t| SCALES.contains(&t.as_str())) {
            j += 1;
        }
        ts.get(j).is_some_and(|t| units.contains(&t.as_str()))
    };
    ts.iter().enumerate().any(|(i, t)| {
        let digits = number(t);
        let spelled = relata_validate::SPELLED_NUMBERS.contains(&t.as_str())
            || SPELLED_MORE.contains(&t.as_str());
        match kind {
            FigureKind::Year => {
                digits.is_some_and(|d| {
                    let core = d.trim_end_matches('s');
                    (3..=4).contains(&core.len()) && core.chars().all(|c| c.is_ascii_digit())
                }) || digits.is_some()
                    && ts
                        .get(i + 1)
                        .is_some_and(|n| matches!(n.as_str(), "bc" | "bce" | "ad" | "ce"))
                    || matches!(t.as_str(), "century" | "centuries" | "millennium")
            }
            FigureKind::Length => digits.is_some() && unit_after(i, LENGTH_UNITS),
            FigureKind::Area => digits.is_some() && unit_after(i, AREA_UNITS),
            FigureKind::Temperature => {
                digits.is_some_and(|d| d.contains('°'))
                    || digits.is_some() && unit_after(i, TEMPERATURE_UNITS)
            }
            FigureKind::Speed => {
                digits.is_some()
                    && ts.get(i + 1).is_some_and(|u| {
                        u.contains("/s")
                            || u.contains("/h")
                            || matches!(u.as_str(), "mph" | "knots" | "kph")
                    })
                    || digits.is_some() && ts.get(i + 2).is_some_and(|p| p == "per")
            }
            FigureKind::Money => {
                t.trim_start_matches("us").starts_with(['$', '€', '£', '¥']) && digits.is_some()
                    || (digits.is_some() || spelled) && unit_after(i, MONEY_UNITS)
            }
            FigureKind::Duration => (digits.is_some() || spelled) && unit_after(i, DURATION_UNITS),
            FigureKind::Count => digits.is_some() || spelled,
        }
    })
}

/// True when `sentence` opens by referring back to what the sentence before it is about
/// ("It …", "The film …").
fn refers_back(sentence: &str) -> bool {
    let mut words = sentence.split_whitespace();
    let Some(first) = words.next() else {
        return false;
    };
    let first = first
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    REFERRING.contains(&first.as_str())
        || first == "the"
            && words
                .next()
                .is_some_and(|w| w.starts_with(char::is_lowercase))
}

/// The kind of figure `question` asks for, when no passage (`(title, text)`) holds one
/// in a sentence about the question's names; `None` when the question asks for none or
/// a passage may answer it.
pub fn ungiven(question: &str, passages: &[(Option<&str>, &str)]) -> Option<FigureKind> {
    let kind = asked(question)?;
    let words = answerability::name_words(question);
    let mentions = |text: &str| {
        let lowered = text.to_lowercase().replace('’', "'");
        words
            .iter()
            .any(|w| answerability::has_word_starting(&lowered, w))
    };
    let given = passages.iter().any(|(title, text)| {
        let titled = words.is_empty() || title.is_some_and(mentions);
        if !titled && !mentions(text) {
            return false;
        }
        // A sentence that refers back is about the names when the one before it was.
        let mut before = false;
        relata_core::sentences::split(text, 1, 1, usize::MAX)
            .into_iter()
            .any(|s| {
                let about = titled || mentions(s) || before && refers_back(s);
                before = about;
                about && holds(s, kind)
            })
    });
    (!given).then_some(kind)
}

/// [`ungiven`] over retrieved passages.
pub fn ungiven_in(question: &str, passages: &[relata_store::Passage]) -> Option<FigureKind> {
    let texts: Vec<(Option<&str>, &str)> = passages
        .iter()
        .map(|p| (p.title.as_deref(), p.text.as_str()))
        .collect();
    ungiven(question, &texts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_asks_for_a_kind_only_by_its_wording() {
        let cases = [
            ("When was Sputnik 1 launched?", Some(FigureKind::Year)),
            ("In what year did the Titanic sink?", Some(FigureKind::Year)),
            ("How tall is K2?", Some(FigureKind::Length)),
            (
                "What is the height of Mount Everest?",
                Some(FigureKind::Length),
            ),
            (
                "What is the surface area of Lake Ladoga?",
                Some(FigureKind::Area),
            ),
            (
                "What is the boiling point of argon?",
                Some(FigureKind::Temperature),
            ),
            (
                "How much did Spirited Away earn at the box office?",
                Some(FigureKind::Money),
            ),
            (
                "What is the typical lifespan of a blue whale?",
                Some(FigureKind::Duration),
            ),
            (
                "What is the speed of light in a vacuum?",
                Some(FigureKind::Speed),
            ),
            (
                "How many people live in the urban area of Algiers?",
                Some(FigureKind::Count),
            ),
            ("What is the population of Palau?", Some(FigureKind::Count)),
            ("Who painted the Mona Lisa?", None),
            ("Where is the Hermitage?", None),
            ("How much did the bridge cost?", Some(FigureKind::Money)),
            // A word inside another is not the phrase ("learned" is not "earned").
            ("Which language learned from Latin?", None),
            // Phrases that ask for no figure there.
            ("What degree did she earn?", None),
            ("How long did the war last?", None),
            ("At the height of its power, who ruled Venice?", None),
            (
                "How much of the island is forested?",
                Some(FigureKind::Count),
            ),
        ];
        for (q, kind) in cases {
            assert_eq!(asked(q), kind, "{q}");
        }
    }

    #[test]
    fn a_figure_of_the_kind_is_read_in_its_many_spellings() {
        assert!(holds(
            "K2, at 8,611 metres (28,251 ft) above sea level, is …",
            FigureKind::Length
        ));
        assert!(holds(
            "It rises to an 8,611-metre summit.",
            FigureKind::Length
        ));
        assert!(holds(
            "It lies 2.878 million light-years from Earth.",
            FigureKind::Length
        ));
        assert!(!holds(
            "K2 is the second-highest mountain on Earth.",
            FigureKind::Length
        ));
        assert!(holds("Founded in 864, the see …", FigureKind::Year));
        assert!(holds(
            "It flourished in the 12th century.",
            FigureKind::Year
        ));
        assert!(holds("Rome was founded in 753 BC.", FigureKind::Year));
        assert!(!holds("It won 11 awards.", FigureKind::Year));
        assert!(holds("Argon boils at −185.8 °C.", FigureKind::Temperature));
        assert!(holds("It boils at 87.3 K.", FigureKind::Temperature));
        assert!(holds("The film grossed $395 million.", FigureKind::Money));
        assert!(holds("It earned 30 billion yen.", FigureKind::Money));
        assert!(holds(
            "He borrowed US$1,000 from his mother.",
            FigureKind::Money
        ));
        assert!(!holds("He was born in the US in 1926.", FigureKind::Money));
        assert!(!holds("It was released in 2001.", FigureKind::Money));
        assert!(holds(
            "Blue whales live for eighty to ninety years.",
            FigureKind::Duration
        ));
        assert!(holds(
            "Light travels at 299,792,458 m/s.",
            FigureKind::Speed
        ));
        assert!(holds(
            "It covers 17,700 square kilometres.",
            FigureKind::Area
        ));
        assert!(holds("He won eleven Grammy Awards.", FigureKind::Count));
        assert!(!holds("He won many awards.", FigureKind::Count));
    }

    #[test]
    fn a_question_is_ungiven_only_when_no_sentence_about_its_names_holds_the_figure() {
        let k2 = [(
            Some("K2"),
            "K2 is the second-highest mountain on Earth. It was first climbed in 1954.",
        )];
        assert_eq!(ungiven("How tall is K2?", &k2), Some(FigureKind::Length));
        // The year is there, in a sentence that refers back.
        assert_eq!(ungiven("When was K2 first climbed?", &k2), None);
        // A figure in a sentence about something else does not answer.
        let other = [(
            Some("Karakoram"),
            "The Karakoram holds K2. Nanga Parbat rises to 8,126 metres.",
        )];
        assert_eq!(ungiven("How tall is K2?", &other), Some(FigureKind::Length));
        let about = [(
            Some("Karakoram"),
            "K2 rises to 8,611 metres in the Karakoram.",
        )];
        assert_eq!(ungiven("How tall is K2?", &about), None);
        // Under the passage's own title every sentence is about it.
        let titled = [(
            Some("Ovenbird"),
            "Ovenbirds are a family of birds. This large family holds around 321 species.",
        )];
        assert_eq!(
            ungiven("How many species of Ovenbird are there?", &titled),
            None
        );
        // No kind asked: never ungiven.
        assert_eq!(ungiven("Who first climbed K2?", &k2), None);
    }
}
