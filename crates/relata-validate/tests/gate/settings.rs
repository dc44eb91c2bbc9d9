//! Check settings have an effect, and the public API answers what the store needs.

use relata_core::{Check, Handle, Reason, RowKind, Severity, Task, Warning};
use relata_validate::{
    CheckSetting, ClassifyInput, ConfigError, GateConfig, MAX_DETAIL_CHARS, RowStatus, Verdict,
    judge_classify, judge_extract,
};

const SOURCE: &str = "Marie Curie was born in Warsaw in 1867. She moved to Paris in 1891.";

fn setting(enabled: bool, severity: Severity) -> CheckSetting {
    CheckSetting { enabled, severity }
}

/// A response that fails exactly `check` (in its only claim or relation, or its second
/// entity), and how to judge it.
fn failing(check: Check, config: &GateConfig) -> (RowStatus, Vec<(Warning, Option<Reason>)>) {
    let extract = |raw: &str, kind: RowKind, index: usize| {
        let j = judge_extract(config, SOURCE, raw.as_bytes());
        let row = j
            .rows()
            .iter()
            .find(|r| r.kind == kind && r.index == index)
            .unwrap()
            .clone();
        (
            row.status(),
            row.warnings()
                .iter()
                .map(|w| (w.warning, w.reason))
                .collect(),
        )
    };
    let mc = r#"{"name":"Marie Curie","type":"person"}"#;
    match check {
        Check::Degenerate => extract(
            &format!(r#"{{"entities":[{mc},{{"name":"N/A","type":"other"}}],"claims":[]}}"#),
            RowKind::Entity,
            1,
        ),
        Check::NoDuplicate => extract(
            &format!(r#"{{"entities":[{mc},{mc}],"claims":[]}}"#),
            RowKind::Entity,
            1,
        ),
        Check::SubjectKnown => extract(
            &format!(
                r#"{{"entities":[{mc}],"claims":[{{"statement":"Marie Curie was born in Warsaw.","quote":"Marie Curie was born in Warsaw","subject":"Pierre"}}]}}"#
            ),
            RowKind::Claim,
            0,
        ),
        Check::NameFound => extract(
            &format!(
                r#"{{"entities":[{mc},{{"name":"Pierre Curie","type":"person"}}],"claims":[]}}"#
            ),
            RowKind::Entity,
            1,
        ),
        Check::Standalone => extract(
            &format!(
                r#"{{"entities":[{mc}],"claims":[{{"statement":"She moved to Paris in 1891.","quote":"She moved to Paris in 1891.","subject":"Marie Curie"}}]}}"#
            ),
            RowKind::Claim,
            0,
        ),
        Check::SubjectTopic => extract(
            &format!(
                r#"{{"entities":[{mc}],"claims":[{{"statement":"Marie Curie was born in Warsaw.","quote":"Marie Curie was born in Warsaw","subject":"Warsaw"}}]}}"#
            ),
            RowKind::Claim,
            0,
        ),
        Check::FigureInQuote => extract(
            &format!(
                r#"{{"entities":[{mc}],"claims":[{{"statement":"Curie was born in Warsaw in 1868.","quote":"born in Warsaw","subject":"Marie Curie"}}]}}"#
            ),
            RowKind::Claim,
            0,
        ),
        Check::Supported => extract(
            &format!(
                r#"{{"entities":[{mc}],"claims":[{{"statement":"Marie Curie was born in Kraków.","quote":"Marie Curie was born in Warsaw","subject":"Marie Curie"}}]}}"#
            ),
            RowKind::Claim,
            0,
        ),
        Check::PairRequested => {
            let input = ClassifyInput {
                handles: [Handle::nth(1), Handle::nth(2)].into(),
                pairs: [(Handle::nth(1), Handle::nth(2))].into(),
            };
            let j = judge_classify(
                config,
                &input,
                br#"{"relations":[{"a":"C2","b":"C1","relation":"supports"}]}"#,
            );
            let row = j.rows()[0].clone();
            (
                row.status(),
                row.warnings()
                    .iter()
                    .map(|w| (w.warning, w.reason))
                    .collect(),
            )
        }
        Check::QuoteFound | Check::HandleKnown => unreachable!("structural"),
    }
}

#[test]
fn every_setting_of_every_check_has_an_effect() {
    for &check in Check::ALL.iter().filter(|c| !c.is_structural()) {
        let reason = match check {
            Check::Degenerate => Some(Reason::Degenerate),
            Check::NoDuplicate => Some(Reason::Duplicate),
            Check::SubjectKnown => Some(Reason::UnknownSubject),
            Check::PairRequested => Some(Reason::UnrequestedPair),
            Check::Supported => Some(Reason::Unsupported),
            Check::NameFound => Some(Reason::NameNotFound),
            Check::Standalone => Some(Reason::NotStandalone),
            Check::SubjectTopic => Some(Reason::WrongSubject),
            Check::FigureInQuote => None,
            _ => unreachable!(),
        };
        let mut config = GateConfig::default();
        if check == Check::Degenerate {
            // A placeholder name is not in the chunk either.
            config
                .set(Check::NameFound, setting(false, Severity::Reject))
                .unwrap();
        }
        if matches!(check, Check::SubjectKnown | Check::Standalone) {
            // A subject the chunk lacks, or a pronoun for one, is not named in the
            // statement's opening either: that check off, so this one is seen alone.
            config
                .set(Check::SubjectTopic, setting(false, Severity::Reject))
                .unwrap();
        }
        if check == Check::FigureInQuote {
            // The support check requires every figure too: off, so that what is seen is
            // this check's own effect.
            config
                .set(Check::Supported, setting(false, Severity::Reject))
                .unwrap();
        }

        config.set(check, setting(true, Severity::Reject)).unwrap();
        let (status, warnings) = failing(check, &config);
        assert_eq!(status, RowStatus::Rejected, "{check} reject");
        assert!(warnings.is_empty(), "{check} reject");

        config.set(check, setting(true, Severity::Warn)).unwrap();
        let (status, warnings) = failing(check, &config);
        assert_eq!(status, RowStatus::Accepted, "{check} warn");
        let expected = match reason {
            Some(r) => (Warning::Demoted, Some(r)),
            None => (Warning::FigureNotInQuote, None),
        };
        assert_eq!(warnings, [expected], "{check} warn");

        config.set(check, setting(false, Severity::Reject)).unwrap();
        let (status, warnings) = failing(check, &config);
        assert_eq!(status, RowStatus::Accepted, "{check} disabled");
        assert!(warnings.is_empty(), "{check} disabled: {warnings:?}");
    }
}

#[test]
fn structural_checks_cannot_be_turned_down() {
    let mut config = GateConfig::default();
    for check in [Check::QuoteFound, Check::HandleKnown] {
        for s in [
            setting(false, Severity::Reject),
            setting(true, Severity::Warn),
            setting(false, Severity::Warn),
        ] {
            assert_eq!(config.set(check, s), Err(ConfigError::Structural(check)));
        }
        assert_eq!(config.setting(check), setting(true, Severity::Reject));
    }
    assert_eq!(config, GateConfig::default());
    assert_eq!(config.iter().count(), Check::ALL.len());
}

#[test]
fn an_accepted_claim_carries_what_the_store_needs() {
    let raw = br#"{"entities":[{"name":"Marie Curie","type":"person"},{"name":"Warsaw","type":"location"}],
        "claims":[{"statement":"Curie moved to Paris in 1891.","quote":"She  moved to\nParis in 1891","subject":"marie curie"}]}"#;
    let j = judge_extract(&GateConfig::default(), SOURCE, raw);
    assert_eq!(j.task(), Task::Extract);
    assert_eq!(j.verdict(), Verdict::Accepted);
    assert!(j.rejections().is_empty());
    let rows = j.accepted();
    assert_eq!(rows.entities().len(), 2);
    assert_eq!(rows.entities()[1].name(), "Warsaw");
    let c = &rows.claims()[0];
    assert_eq!(c.index(), 0);
    assert_eq!(c.statement(), "Curie moved to Paris in 1891.");
    // "She" is read with the sentence before, which the stored quote takes in.
    assert_eq!(
        c.quote(),
        "Marie Curie was born in Warsaw in 1867. She moved to Paris in 1891"
    );
    assert_eq!(c.quote_span(), (0, 66));
    assert_eq!(c.subject(), "Marie Curie");
    assert_eq!(c.subject_entity_index(), Some(0));
    assert!(c.warnings().is_empty());
    let report = serde_json::to_value(j.report()).unwrap();
    assert_eq!(
        report,
        serde_json::json!({
            "task": "extract", "verdict": "accepted", "reason": null,
            "rows": [
                {"kind": "entity", "index": 0, "status": "accepted", "reason": null, "warnings": []},
                {"kind": "entity", "index": 1, "status": "accepted", "reason": null, "warnings": []},
                {"kind": "claim", "index": 0, "status": "accepted", "reason": null, "warnings": [],
                 "quote_start": 0, "quote_end": 66},
            ]
        })
    );
}

#[test]
fn details_are_bounded_and_never_carry_large_model_text() {
    let long = "x".repeat(5_000);
    let cases = [
        format!(r#"{{"entities":[],"claims":[],"{long}":1}}"#),
        format!(r#"{{"entities":[{{"name":"Paris","type":"{long}"}}],"claims":[]}}"#),
        format!(r#"{{"entities":[{{"name":"Paris","type":"location","{long}":1}}],"claims":[]}}"#),
        format!(
            r#"{{"entities":[],"claims":[{{"statement":"Marie Curie was born.","quote":"{} {long}","subject":"Marie Curie"}}]}}"#,
            "y".repeat(1_000)
        ),
        format!("Here is {long}"),
        format!("{{\"entities\":[],\"claims\":[]}} {long}"),
    ];
    for raw in &cases {
        let j = judge_extract(&GateConfig::default(), SOURCE, raw.as_bytes());
        let rejections = j.rejections();
        assert!(!rejections.is_empty(), "{}", &raw[..40]);
        for r in rejections {
            assert!(r.detail.chars().count() <= MAX_DETAIL_CHARS, "{}", r.detail);
            assert!(!r.detail.contains(&"x".repeat(100)), "{}", r.detail);
        }
    }
}

#[test]
fn a_whole_rejection_is_one_rejection_without_rows() {
    let j = judge_classify(
        &GateConfig::default(),
        &ClassifyInput::default(),
        b"```json\n{}",
    );
    assert_eq!(j.verdict(), Verdict::Rejected);
    assert!(j.rows().is_empty());
    let r = j.rejections();
    assert_eq!(r.len(), 1);
    assert_eq!(
        (r[0].kind, r[0].index, r[0].reason),
        (None, None, Reason::NotJson)
    );
    assert_eq!(j.response_rejection(), Some(&r[0]));
}

/// At severity reject, a figure the quote lacks rejects the row as `inconsistent`: the
/// quote was found, so `quote_not_found` would misstate what went wrong.
#[test]
fn figure_in_quote_rejects_as_inconsistent() {
    let mut config = GateConfig::default();
    config
        .set(
            Check::FigureInQuote,
            CheckSetting {
                enabled: true,
                severity: Severity::Reject,
            },
        )
        .unwrap();
    let source = "Marie Curie was born in Warsaw.";
    let raw = r#"{"entities":[{"name":"Marie Curie","type":"person"}],"claims":[{"statement":"Curie was born in Warsaw in 1868.","quote":"born in Warsaw","subject":"Marie Curie"}]}"#;
    let reason = |config: &GateConfig| {
        let j = relata_validate::judge_extract(config, source, raw.as_bytes());
        let claim = j.rows().iter().find(|r| r.kind == RowKind::Claim).unwrap();
        assert_eq!(claim.status(), RowStatus::Rejected);
        claim.reason()
    };
    // The support check runs first and requires every figure: it names the rejection.
    assert_eq!(reason(&config), Some(relata_core::Reason::Unsupported));
    // Without it, this check rejects the same row as inconsistent.
    config
        .set(Check::Supported, setting(false, Severity::Reject))
        .unwrap();
    assert_eq!(reason(&config), Some(relata_core::Reason::Inconsistent));
}
