//! The table-driven adversarial corpus in `corpus.json`: every case is fed to the gate and
//! its verdict, response reason and per-row statuses, warnings and quotes are compared.

use std::collections::BTreeMap;

use relata_core::{Check, Handle, Reason, RowKind, Task};
use relata_validate::{
    CheckSetting, ClassifyInput, ExtractShape, GateConfig, RowOutcome, RowStatus, judge_classify,
    judge_extract_as,
};
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Corpus {
    #[allow(dead_code)]
    about: String,
    source: String,
    handles: Vec<String>,
    pairs: Vec<[String; 2]>,
    valid_extract: Value,
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    task: Task,
    source: Option<String>,
    #[serde(default)]
    config: BTreeMap<Check, CheckSetting>,
    response: Option<String>,
    response_json: Option<Value>,
    response_hex: Option<String>,
    response_gen: Option<String>,
    verdict: String,
    reason: Option<Reason>,
    rows: Vec<String>,
    quotes: Option<Vec<String>>,
    spans: Option<Vec<[usize; 2]>>,
    subjects: Option<Vec<String>>,
    /// Every accepted entity, as `name/type`, those a claim's subject implied included.
    entities: Option<Vec<String>>,
    /// `sentences` for a `relata.extract` v2 response (claims keyed by sentence handle),
    /// `shown` for v3 (a statement may be `null`: the sentence as shown); v1 otherwise.
    shape: Option<String>,
    /// The document's title (what v3 shows sentences with).
    title: Option<String>,
    /// Every accepted claim's statement, as stored.
    statements: Option<Vec<String>>,
}

fn corpus() -> Corpus {
    serde_json::from_str(include_str!("corpus.json")).expect("corpus.json is valid")
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn generate(spec: &str, corpus: &Corpus) -> Vec<u8> {
    let (kind, n) = spec.split_once(':').expect("gen spec is kind:N");
    let n: usize = n.parse().expect("gen N");
    let valid = serde_json::to_string(&corpus.valid_extract).unwrap();
    let s = match kind {
        "nest" => format!("{}{}", "[".repeat(n), "]".repeat(n)),
        "nest_obj" => format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n)),
        "deep_row" => format!(
            r#"{{"entities":[{{"name":{}{},"type":"other"}}],"claims":[]}}"#,
            "[".repeat(n),
            "]".repeat(n)
        ),
        "pad" => {
            assert!(n >= valid.len());
            format!("{valid}{}", " ".repeat(n - valid.len()))
        }
        "pad_classify" => {
            let v = r#"{"relations":[]}"#;
            format!("{v}{}", "\n".repeat(n - v.len()))
        }
        "big_string" => format!(
            r#"{{"entities":[{{"name":"{}","type":"other"}}],"claims":[]}}"#,
            "a".repeat(n)
        ),
        "many_entities" => {
            let rows: Vec<String> = (0..n)
                .map(|i| format!(r#"{{"name":"Entity number {i}","type":"other"}}"#))
                .collect();
            format!(r#"{{"entities":[{}],"claims":[]}}"#, rows.join(","))
        }
        "many_claims" => {
            let c = &corpus.valid_extract["claims"][0];
            let rows: Vec<String> = (0..n).map(|_| c.to_string()).collect();
            format!(r#"{{"entities":[],"claims":[{}]}}"#, rows.join(","))
        }
        "many_relations" => {
            let rows: Vec<&str> = (0..n)
                .map(|_| r#"{"a":"C1","b":"C2","relation":"supports"}"#)
                .collect();
            format!(r#"{{"relations":[{}]}}"#, rows.join(","))
        }
        other => panic!("unknown generator {other}"),
    };
    s.into_bytes()
}

fn raw(case: &Case, corpus: &Corpus) -> Vec<u8> {
    let given = [
        case.response.is_some(),
        case.response_json.is_some(),
        case.response_hex.is_some(),
        case.response_gen.is_some(),
    ];
    assert_eq!(
        given.iter().filter(|g| **g).count(),
        1,
        "{}: exactly one response field",
        case.name
    );
    if let Some(r) = &case.response {
        return r.as_bytes().to_vec();
    }
    if let Some(v) = &case.response_json {
        return serde_json::to_vec(v).unwrap();
    }
    if let Some(h) = &case.response_hex {
        return unhex(h);
    }
    generate(case.response_gen.as_deref().unwrap(), corpus)
}

/// `e0 ok`, `c1 quote_not_found`, `c0 ok +figure_not_in_quote +demoted:degenerate`.
fn describe(row: &RowOutcome) -> String {
    let kind = match row.kind {
        RowKind::Entity => 'e',
        RowKind::Claim => 'c',
        RowKind::Relation => 'r',
        RowKind::Join => 'j',
    };
    let mut s = format!("{kind}{} ", row.index);
    match (row.status(), row.reason()) {
        (RowStatus::Accepted, None) => s.push_str("ok"),
        (RowStatus::Rejected, Some(r)) => s.push_str(r.as_str()),
        other => panic!("inconsistent row {other:?}"),
    }
    for w in row.warnings() {
        match w.reason {
            Some(r) => s.push_str(&format!(" +{}:{}", w.warning, r)),
            None => s.push_str(&format!(" +{}", w.warning)),
        }
    }
    s
}

#[test]
fn every_case_is_judged_as_expected() {
    let corpus = corpus();
    let input = ClassifyInput {
        handles: corpus
            .handles
            .iter()
            .map(|h| Handle::parse(h).unwrap())
            .collect(),
        pairs: corpus
            .pairs
            .iter()
            .map(|[a, b]| (Handle::parse(a).unwrap(), Handle::parse(b).unwrap()))
            .collect(),
    };
    let mut failures = Vec::new();
    for case in &corpus.cases {
        let mut config = GateConfig::default();
        for (check, setting) in &case.config {
            config.set(*check, *setting).unwrap();
        }
        let raw = raw(case, &corpus);
        let source = case.source.as_deref().unwrap_or(&corpus.source);
        let (report, rows, claims) = match case.task {
            Task::Extract => {
                let shape = match case.shape.as_deref() {
                    None => ExtractShape::Quotes,
                    Some("sentences") => ExtractShape::Sentences,
                    Some("shown") => ExtractShape::Shown,
                    Some(other) => panic!("{}: shape {other:?}", case.name),
                };
                let j = judge_extract_as(&config, shape, source, case.title.as_deref(), &raw, None);
                let claims: Vec<_> = j.accepted().claims().to_vec();
                if let Some(want) = &case.entities {
                    let got: Vec<String> = j
                        .accepted()
                        .entities()
                        .iter()
                        .map(|e| format!("{}/{}", e.name(), e.entity_type()))
                        .collect();
                    if &got != want {
                        failures.push(format!("{}:\n    entities {got:?} != {want:?}", case.name));
                    }
                }
                (j.report(), j.rows().to_vec(), claims)
            }
            Task::Classify => {
                let j = judge_classify(&config, &input, &raw);
                (j.report(), j.rows().to_vec(), Vec::new())
            }
            // Answers and joins have their own gates and unit tests (`answer.rs`,
            // `join.rs`).
            Task::Answer | Task::Join => {
                panic!("{}: the corpus holds extract and classify cases", case.name)
            }
        };
        let got_rows: Vec<String> = rows.iter().map(describe).collect();
        let verdict = serde_json::to_value(report.verdict).unwrap();
        let mut problems = Vec::new();
        if verdict != case.verdict.as_str() {
            problems.push(format!("verdict {verdict} != {}", case.verdict));
        }
        if report.reason != case.reason {
            problems.push(format!("reason {:?} != {:?}", report.reason, case.reason));
        }
        if got_rows != case.rows {
            problems.push(format!("rows {got_rows:?} != {:?}", case.rows));
        }
        for c in &claims {
            let (s, e) = c.quote_span();
            assert_eq!(c.quote(), &source[s..e], "{}", case.name);
        }
        if let Some(q) = &case.quotes {
            let got: Vec<&str> = claims.iter().map(|c| c.quote()).collect();
            if &got != q {
                problems.push(format!("quotes {got:?} != {q:?}"));
            }
        }
        if let Some(sp) = &case.spans {
            let got: Vec<[usize; 2]> = claims
                .iter()
                .map(|c| [c.quote_span().0, c.quote_span().1])
                .collect();
            if &got != sp {
                problems.push(format!("spans {got:?} != {sp:?}"));
            }
        }
        if let Some(st) = &case.statements {
            let got: Vec<&str> = claims.iter().map(|c| c.statement()).collect();
            if &got != st {
                problems.push(format!("statements {got:?} != {st:?}"));
            }
        }
        if let Some(su) = &case.subjects {
            let got: Vec<&str> = claims.iter().map(|c| c.subject()).collect();
            if &got != su {
                problems.push(format!("subjects {got:?} != {su:?}"));
            }
        }
        if !problems.is_empty() {
            failures.push(format!("{}:\n    {}", case.name, problems.join("\n    ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        corpus.cases.len(),
        failures.join("\n")
    );
}

#[test]
fn the_corpus_is_large_and_hits_every_reason_twice() {
    let corpus = corpus();
    assert!(corpus.cases.len() >= 80, "{} cases", corpus.cases.len());
    let mut counts: BTreeMap<Reason, usize> = BTreeMap::new();
    for case in &corpus.cases {
        let mut reasons: Vec<Reason> = case.reason.into_iter().collect();
        for row in &case.rows {
            let status = row.split(' ').nth(1).unwrap();
            if status != "ok" {
                reasons.push(status.parse().unwrap());
            }
        }
        reasons.sort();
        reasons.dedup();
        for r in reasons {
            *counts.entry(r).or_default() += 1;
        }
    }
    let gate_reasons = Reason::ALL
        .iter()
        // Decided by the adapter from the envelope, or by the answer gate only (its own
        // unit tests feed each of them).
        .filter(|r| {
            !matches!(
                r,
                Reason::Truncated | Reason::Refusal | Reason::UncitedAnswer | Reason::BadAbstention
            )
        });
    for r in gate_reasons {
        let n = counts.get(r).copied().unwrap_or(0);
        assert!(n >= 2, "reason {r} is hit by {n} case(s); need 2");
    }
    println!("{} cases; cases per reason: {counts:?}", corpus.cases.len());
}
