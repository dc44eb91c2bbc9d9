//! Property tests: the gate never panics, accepted quotes are the source's own text at
//! their offsets, and a quote taken from the source with its whitespace perturbed is
//! always found.

use proptest::prelude::*;
use relata_core::{Handle, Reason, RowKind};
use relata_validate::normalize::collapse;
use relata_validate::{ClassifyInput, GateConfig, RowStatus, judge_classify, judge_extract};
use unicode_normalization::UnicodeNormalization;

fn input() -> ClassifyInput {
    ClassifyInput {
        handles: (1..=4).map(Handle::nth).collect(),
        pairs: [(1, 2), (1, 3), (2, 4)]
            .into_iter()
            .map(|(a, b)| (Handle::nth(a), Handle::nth(b)))
            .collect(),
    }
}

/// Fragments that steer random text towards the decoder's interesting paths.
fn jsonish() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"",
        "\\",
        "\\u00e9",
        "\\ud800",
        "```",
        "```json\n",
        "\n",
        " ",
        "\u{feff}",
        "NaN",
        "1e999",
        "-0",
        "true",
        "null",
        "\"entities\"",
        "\"claims\"",
        "\"relations\"",
        "\"name\"",
        "\"type\"",
        "\"person\"",
        "\"statement\"",
        "\"quote\"",
        "\"subject\"",
        "\"a\"",
        "\"b\"",
        "\"C1\"",
        "\"C2\"",
        "\"relation\"",
        "\"supports\"",
        "\"Marie Curie\"",
        "e\u{301}",
        "\u{1100}\u{1161}",
    ]);
    prop::collection::vec(atoms, 0..200).prop_map(|v| v.concat())
}

const SOURCE: &str = "Marie Curie was born in Warsaw in 1867.\n\nShe moved to Paris.";

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_bytes(raw in prop::collection::vec(any::<u8>(), 0..4096)) {
        let config = GateConfig::default();
        let _ = judge_extract(&config, SOURCE, &raw);
        let _ = judge_classify(&config, &input(), &raw);
    }

    #[test]
    fn never_panics_on_json_like_text(raw in jsonish(), source in "\\PC{0,200}") {
        let config = GateConfig::default();
        let j = judge_extract(&config, &source, raw.as_bytes());
        for c in j.accepted().claims() {
            let (s, e) = c.quote_span();
            prop_assert_eq!(c.quote(), &source[s..e]);
        }
        let _ = judge_classify(&config, &input(), raw.as_bytes());
    }

    /// Arbitrary Unicode, control characters and NUL included, in every string field of a
    /// well-formed response: nothing panics, every row gets an outcome, a row holding a NUL
    /// is rejected `unstorable`, and no accepted row carries a NUL to the store.
    #[test]
    fn arbitrary_unicode_in_fields_never_reaches_the_store_unstorable(
        names in prop::collection::vec(hostile(), 0..4),
        claims in prop::collection::vec((hostile(), hostile(), hostile()), 0..4),
        handles in prop::collection::vec((hostile(), hostile()), 0..4),
    ) {
        let config = GateConfig::default();
        let response = serde_json::json!({
            "entities": names.iter().map(|n| serde_json::json!({"name": n, "type": "person"})).collect::<Vec<_>>(),
            "claims": claims.iter().map(|(s, q, sub)| serde_json::json!({"statement": s, "quote": q, "subject": sub})).collect::<Vec<_>>(),
        });
        let j = judge_extract(&config, SOURCE, &serde_json::to_vec(&response).unwrap());
        prop_assert!(j.response_rejection().is_none(), "{:?}", j.response_rejection());
        prop_assert_eq!(j.rows().len(), names.len() + claims.len());
        for row in j.rows() {
            let fields: Vec<&str> = match row.kind {
                RowKind::Entity => vec![names[row.index].as_str()],
                _ => {
                    let (s, q, sub) = &claims[row.index];
                    vec![s.as_str(), q.as_str(), sub.as_str()]
                }
            };
            if fields.iter().any(|f| f.contains('\0')) {
                prop_assert_eq!(row.status(), RowStatus::Rejected);
                prop_assert_eq!(row.reason(), Some(Reason::Unstorable));
            }
        }
        for e in j.accepted().entities() {
            prop_assert!(!e.name().contains('\0'));
        }
        for c in j.accepted().claims() {
            prop_assert!(!c.statement().contains('\0'));
            prop_assert!(!c.quote().contains('\0'));
            prop_assert!(!c.subject().contains('\0'));
        }

        let response = serde_json::json!({
            "relations": handles.iter().map(|(a, b)| serde_json::json!({"a": a, "b": b, "relation": "supports"})).collect::<Vec<_>>(),
        });
        let j = judge_classify(&config, &input(), &serde_json::to_vec(&response).unwrap());
        prop_assert_eq!(j.rows().len(), handles.len());
        for row in j.rows() {
            let (a, b) = &handles[row.index];
            if a.contains('\0') || b.contains('\0') {
                prop_assert_eq!(row.status(), RowStatus::Rejected);
            }
            // Fields are read in order; `a` over its length bound fails first as `schema`.
            if a.contains('\0') || (b.contains('\0') && a.chars().count() <= 12) {
                prop_assert_eq!(row.reason(), Some(Reason::Unstorable));
            }
        }
    }

    /// The segment-wise normalisation equals normalising the whole text, then collapsing.
    #[test]
    fn collapse_equals_whole_text_nfc(s in text()) {
        let whole: String = s.nfc().collect();
        let naive: Vec<&str> = whole.split_whitespace().collect();
        prop_assert_eq!(collapse(&s), naive.join(" "));
    }

    #[test]
    fn a_source_substring_with_perturbed_whitespace_is_found(
        words in prop::collection::vec(word(), 4..40),
        seps in prop::collection::vec(space(), 40),
        pick in (0usize..1000, 2usize..12),
        perturb in prop::collection::vec(space(), 12),
        nfd in any::<bool>(),
    ) {
        // Build a source from words and varied whitespace.
        let mut source = String::from(&seps[39]);
        let mut starts = Vec::new();
        for (i, w) in words.iter().enumerate() {
            starts.push(source.len());
            source.push_str(w);
            source.push_str(&seps[i % 39]);
        }
        let first = pick.0 % (words.len() - 1);
        let n = pick.1.min(words.len() - first);
        let chosen = &words[first..first + n];
        // The quote: the same words, other whitespace, maybe decomposed.
        let mut quote = String::from(&perturb[11]);
        for (i, w) in chosen.iter().enumerate() {
            if i > 0 {
                quote.push_str(&perturb[i % 11]);
            }
            quote.push_str(w);
        }
        let quote: String = if nfd { quote.nfd().collect() } else { quote };
        prop_assume!(collapse(&quote).chars().count() >= 12 && n >= 3);
        // The statement restates the quote and its subject is the quote's first word, so
        // that the support check (which this property is not about) holds.
        let response = serde_json::json!({
            "entities": [{"name": chosen[0], "type": "other"}],
            "claims": [{
                "statement": collapse(&quote),
                "quote": quote,
                "subject": chosen[0],
            }],
        });
        let raw = serde_json::to_vec(&response).unwrap();
        // Random words have no verb: the checks that read a statement's shape (not this
        // property's) are off.
        let mut config = GateConfig::default();
        for check in [relata_core::Check::Standalone, relata_core::Check::SubjectTopic] {
            config
                .set(
                    check,
                    relata_validate::CheckSetting { enabled: false, severity: relata_core::Severity::Reject },
                )
                .unwrap();
        }
        let j = judge_extract(&config, &source, &raw);
        let claim_rows: Vec<_> = j.rows().iter().filter(|r| r.kind == RowKind::Claim).collect();
        prop_assert_eq!(claim_rows[0].status(), RowStatus::Accepted, "{:?}", claim_rows[0]);
        let c = &j.accepted().claims()[0];
        let (s, e) = c.quote_span();
        prop_assert_eq!(c.quote(), &source[s..e]);
        prop_assert_eq!(collapse(c.quote()), collapse(&quote));
        // The first occurrence: no earlier word-aligned start holds the same text.
        prop_assert!(s <= starts[first], "{} > {}", s, starts[first]);
    }
}

fn word() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a",
            "b",
            "k",
            "r",
            "s",
            "t",
            "o",
            "é",
            "e\u{301}",
            "ñ",
            "ü",
            "Å",
            "\u{212b}",
            "ø",
            "ẹ\u{302}",
            "가",
            "\u{1100}\u{1161}",
            "ß",
            "Z",
        ]),
        4..8,
    )
    .prop_map(|v| v.concat())
}

fn space() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            " ", "  ", "\n", "\n\n", "\t", "\r\n", "\u{a0}", "\u{2003}",
        ]),
        1..3,
    )
    .prop_map(|v| v.concat())
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            word(),
            space(),
            any::<char>().prop_map(|c| c.to_string()),
            prop::sample::select(vec![
                "\u{301}", "\u{323}", "\u{2000}", "\u{1161}", "\u{11a8}"
            ])
            .prop_map(str::to_owned),
        ],
        0..30,
    )
    .prop_map(|v| v.concat())
}

/// Text a hostile model or corpus could send: any character, control characters and NUL
/// made likely, pieces of the source so some rows get far enough to be judged.
fn hostile() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            any::<char>().prop_map(|c| c.to_string()),
            prop::sample::select(vec![
                "\0", "\u{1}", "\u{7f}", "\u{85}", "\u{fffe}", "\u{feff}", "\u{202e}", "\n", "\t",
            ])
            .prop_map(str::to_owned),
            prop::sample::select(vec![
                "Marie Curie",
                "was born in Warsaw",
                " in 1867",
                "C1",
                "C2"
            ])
            .prop_map(str::to_owned),
        ],
        0..8,
    )
    .prop_map(|v| v.concat())
}

/// Words that steer random text towards the name reader's paths: titles, openers,
/// connectors, possessives, figures and sentence ends.
fn wordy() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "The",
        "A",
        "2001:",
        "Space",
        "Odyssey",
        "and",
        "the",
        "of",
        "Peter's",
        "St.",
        "Basilica",
        "Often",
        "Set",
        "Reading",
        "is",
        "was",
        "in",
        "New",
        "York",
        ". ",
        ", ",
        "\n\n",
        "é",
        "Ünïcode",
        "Romeo",
        "Juliet",
        "'s",
        "’s",
        "J.",
        "D.",
        " ",
        "Fe'i",
        "-",
        "&",
    ]);
    prop::collection::vec(atoms, 0..40).prop_map(|v| v.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The names a chunk gives never panic to read, and each is the chunk's own text,
    /// whatever the title and wherever the text writes it.
    #[test]
    fn names_never_panic_and_are_the_chunks_text(
        text in wordy(),
        from in 0usize..40,
        len in 0usize..6,
    ) {
        let words: Vec<&str> = text.split_whitespace().collect();
        let title = words.iter().skip(from).take(len).copied().collect::<Vec<_>>().join(" ");
        for title in [None, Some(title.as_str())] {
            for name in relata_core::names::candidates(&text, title) {
                prop_assert!(text.contains(&name), "{name:?} is not in {text:?}");
            }
        }
    }
}
