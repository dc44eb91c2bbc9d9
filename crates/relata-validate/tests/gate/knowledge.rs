//! The knowledge checks measured on a labelled set of real Wikipedia summaries
//! (`knowledge.json`): claims a model might make from one sentence of a chunk, each
//! labelled by hand as standalone or not, about its subject or not, and supported by its
//! source (read with the names the sentences before it give) or not.
//!
//! Each item is judged by the whole gate as a `relata.extract` v2 response (the claim
//! keyed by its source sentence's handle), once per check with that check alone among the
//! claim checks that judge a statement's form, subject and support, so each figure is that
//! check's own. The targets (issue "knowledge, not sentences"): per check, at least 95% of
//! the bad items rejected and at least 90% of the good ones kept.
//!
//! The figures print with
//! `cargo test -p relata-validate --test gate knowledge_ -- --nocapture`.

use std::collections::BTreeMap;

use relata_core::{Check, Reason, RowKind, Severity};
use relata_validate::{CheckSetting, ExtractShape, GateConfig, judge_extract_as};

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Set {
    #[allow(dead_code)] // documentation for people
    about: String,
    items: Vec<Item>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Item {
    id: String,
    category: String,
    #[allow(dead_code)]
    title: String,
    chunk: String,
    source: String,
    statement: String,
    subject: String,
    standalone: bool,
    about_subject: bool,
    supported: bool,
    #[allow(dead_code)]
    note: String,
}

fn set() -> Set {
    serde_json::from_str(include_str!("knowledge.json")).unwrap()
}

/// Real model outputs, labelled the same way (`real.json`).
fn real() -> Set {
    serde_json::from_str(include_str!("real.json")).unwrap()
}

/// The checks measured here, with the label each is measured against and the reason it
/// rejects with.
const MEASURED: [(Check, Reason, &str); 3] = [
    (Check::Standalone, Reason::NotStandalone, "standalone"),
    (Check::SubjectTopic, Reason::WrongSubject, "about_subject"),
    (Check::Supported, Reason::Unsupported, "supported"),
];

fn label(item: &Item, which: &str) -> bool {
    match which {
        "standalone" => item.standalone,
        "about_subject" => item.about_subject,
        "supported" => item.supported,
        other => panic!("no label {other}"),
    }
}

/// The gate with `check` the only one among the statement checks.
fn alone(check: Check) -> GateConfig {
    let mut c = GateConfig::default();
    for other in [
        Check::Standalone,
        Check::SubjectTopic,
        Check::Supported,
        Check::SubjectKnown,
        Check::NameFound,
    ] {
        if other != check {
            c.set(
                other,
                CheckSetting {
                    enabled: false,
                    severity: Severity::Reject,
                },
            )
            .unwrap();
        }
    }
    c
}

/// The item as the v2 response a model would give (its claim keyed by the handle of its
/// source sentence); as a v1 response quoting the source where relata's splitter does not
/// give the source as one sentence ("… etc. It is …", "Charles X. A …": 3 items).
fn response(item: &Item) -> (ExtractShape, String) {
    let spans = relata_core::sentences::handled(&item.chunk);
    match spans
        .iter()
        .position(|&(s, e)| item.chunk[s..e] == item.source)
    {
        Some(k) => (
            ExtractShape::Sentences,
            serde_json::json!({
                "entities": [],
                "claims": {format!("S{}", k + 1): {"subject": item.subject, "statement": item.statement}},
            })
            .to_string(),
        ),
        None => (
            ExtractShape::Quotes,
            serde_json::json!({
                "entities": [],
                "claims": [{"statement": item.statement, "quote": item.source, "subject": item.subject}],
            })
            .to_string(),
        ),
    }
}

/// Whether the gate, with `check` alone, rejects the item for `reason`; `Err` when it
/// rejects it for another (a defect of the set or the gate).
fn rejected(config: &GateConfig, item: &Item, reason: Reason) -> Result<(bool, String), String> {
    let (shape, raw) = response(item);
    let j = judge_extract_as(
        config,
        shape,
        &item.chunk,
        Some(&item.title),
        raw.as_bytes(),
        None,
    );
    let row = j
        .rows()
        .iter()
        .find(|r| r.kind == RowKind::Claim)
        .cloned()
        .ok_or_else(|| format!("no claim row: {:?}", j.response_rejection()))?;
    match row.reason() {
        None => Ok((false, String::new())),
        Some(r) if r == reason => Ok((true, row.detail().unwrap_or_default().to_owned())),
        Some(r) => Err(format!("{r}: {}", row.detail().unwrap_or_default())),
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    /// Labelled good, kept.
    kept: usize,
    /// Labelled good, rejected.
    lost: usize,
    /// Labelled bad, rejected.
    caught: usize,
    /// Labelled bad, kept.
    missed: usize,
}

impl Tally {
    fn add(&mut self, good: bool, rejected: bool) {
        match (good, rejected) {
            (true, false) => self.kept += 1,
            (true, true) => self.lost += 1,
            (false, true) => self.caught += 1,
            (false, false) => self.missed += 1,
        }
    }
    fn bad_rejected(&self) -> f64 {
        ratio(self.caught, self.caught + self.missed)
    }
    fn good_kept(&self) -> f64 {
        ratio(self.kept, self.kept + self.lost)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

/// Every item judged by `check` alone: the overall tally and one per category.
fn measure(
    items: &[Item],
    check: Check,
    reason: Reason,
    which: &str,
    show: bool,
) -> (Tally, BTreeMap<String, Tally>) {
    let config = alone(check);
    let mut all = Tally::default();
    let mut by: BTreeMap<String, Tally> = BTreeMap::new();
    for item in items {
        let (rej, detail) = rejected(&config, item, reason)
            .unwrap_or_else(|e| panic!("{} ({check}): rejected for another reason: {e}", item.id));
        let good = label(item, which);
        all.add(good, rej);
        by.entry(item.category.clone()).or_default().add(good, rej);
        if show && good == rej {
            println!(
                "  {check}: {} {}: {:?} (subject {:?}) / {:?}{}",
                if rej { "LOST  " } else { "MISSED" },
                item.id,
                item.statement,
                item.subject,
                item.source,
                if detail.is_empty() {
                    String::new()
                } else {
                    format!(" — {detail}")
                }
            );
        }
    }
    (all, by)
}

#[test]
fn knowledge_set_is_well_formed() {
    let set = set();
    assert!(set.items.len() >= 200, "{} items", set.items.len());
    let mut ids = std::collections::HashSet::new();
    for item in &set.items {
        assert!(ids.insert(&item.id), "duplicate id {}", item.id);
        assert!(item.chunk.contains(&item.source), "{}", item.id);
        response(item);
    }
    for (_, _, which) in MEASURED {
        let good = set.items.iter().filter(|i| label(i, which)).count();
        assert!(
            good >= 50 && set.items.len() - good >= 50,
            "{which}: {good} good"
        );
    }
}

/// Prints each check's figures on `items`, one line per category.
fn report(items: &[Item], check: Check, reason: Reason, which: &str) -> Tally {
    let (all, by) = measure(items, check, reason, which, true);
    println!(
        "{check}: {} items; bad rejected {:.1}%, good kept {:.1}% ({} caught, {} missed, {} kept, {} lost)",
        all.caught + all.missed + all.kept + all.lost,
        100.0 * all.bad_rejected(),
        100.0 * all.good_kept(),
        all.caught,
        all.missed,
        all.kept,
        all.lost
    );
    for (cat, t) in &by {
        println!(
            "    {cat:<22} bad rejected {}/{}, good kept {}/{}",
            t.caught,
            t.caught + t.missed,
            t.kept,
            t.kept + t.lost
        );
    }
    all
}

#[test]
fn knowledge_checks_meet_their_targets_on_the_labelled_set() {
    let items = set().items;
    let mut failures = Vec::new();
    for (check, reason, which) in MEASURED {
        let all = report(&items, check, reason, which);
        if all.bad_rejected() < 0.95 {
            failures.push(format!("{check}: bad rejected {:.3}", all.bad_rejected()));
        }
        if all.good_kept() < 0.90 {
            failures.push(format!("{check}: good kept {:.3}", all.good_kept()));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

/// Each check is live on the set: with it switched off, nothing is rejected for its reason.
#[test]
fn knowledge_checks_switched_off_reject_nothing() {
    for (check, reason, _) in MEASURED {
        let mut config = alone(check);
        config
            .set(
                check,
                CheckSetting {
                    enabled: false,
                    severity: Severity::Reject,
                },
            )
            .unwrap();
        for item in set().items.iter().take(120).chain(&real().items) {
            let (rej, _) = rejected(&config, item, reason).unwrap();
            assert!(!rej, "{}: {check} off still rejects", item.id);
        }
    }
}

/// The real outputs as the whole default gate judges them: what a user reads is what it
/// accepts, so the target (issue "knowledge, not sentences": by hand, at least 90% of
/// accepted claims standalone, about their subject and supported) is on the accepted
/// claims. Each check's own figures on these outputs print too (they are reported in
/// BENCHMARKS.md, not held to the labelled set's targets: real outputs are what the
/// checks were not written from).
#[test]
fn real_outputs_the_gate_accepts_are_knowledge() {
    let set = real();
    let mut ids = std::collections::HashSet::new();
    for item in &set.items {
        assert!(ids.insert(&item.id), "duplicate id {}", item.id);
        assert!(item.chunk.contains(&item.source), "{}", item.id);
    }
    for (check, reason, which) in MEASURED {
        report(&set.items, check, reason, which);
    }
    let config = GateConfig::default();
    let mut by: BTreeMap<String, [usize; 4]> = BTreeMap::new();
    for item in &set.items {
        let (shape, raw) = response(item);
        let j = judge_extract_as(
            &config,
            shape,
            &item.chunk,
            Some(&item.title),
            raw.as_bytes(),
            None,
        );
        let accepted = j
            .rows()
            .iter()
            .any(|r| r.kind == RowKind::Claim && r.reason().is_none());
        if !accepted {
            continue;
        }
        let t = by.entry(item.category.clone()).or_default();
        t[0] += 1;
        for (k, (_, _, which)) in MEASURED.iter().enumerate() {
            if label(item, which) {
                t[k + 1] += 1;
            } else {
                println!("  accepted, not {which}: {} {:?}", item.id, item.statement);
            }
        }
    }
    let mut failures = Vec::new();
    for (cat, [n, standalone, about, supported]) in &by {
        println!(
            "{cat}: {n} of the model's claims accepted; by hand {standalone} standalone, {about} about their subject, {supported} supported"
        );
        for (which, good) in [
            ("standalone", standalone),
            ("about_subject", about),
            ("supported", supported),
        ] {
            if (*good as f64) < 0.9 * *n as f64 {
                failures.push(format!("{cat}: {good} of {n} accepted {which}"));
            }
        }
    }
    assert!(!by.is_empty(), "the gate accepted none of the real outputs");
    assert!(failures.is_empty(), "{failures:?}");
}

#[test]
fn a_common_word_opening_the_sentence_is_no_subject() {
    let set = set();
    let items: Vec<&Item> = set
        .items
        .iter()
        .filter(|i| i.id.starts_with("k-common-"))
        .collect();
    assert_eq!(items.len(), 5);
    for item in items {
        let (rejected, detail) =
            rejected(&alone(Check::SubjectTopic), item, Reason::WrongSubject).unwrap();
        assert!(
            rejected && detail.contains("common word"),
            "{}: {detail}",
            item.id
        );
    }
}

/// A name the chunk gives as another name of what a statement is about is its subject
/// (`k-alias-001`), another name of the chunk is not (`k-alias-002`), and a name followed
/// by a phrase about it ("… in the United States") is still the head (`k-alias-003`).
#[test]
fn an_alias_the_chunk_gives_is_the_subject_and_another_name_is_not() {
    let set = set();
    let item = |id: &str| set.items.iter().find(|i| i.id == id).unwrap();
    let config = alone(Check::SubjectTopic);
    for id in ["k-alias-001", "k-alias-003"] {
        let (rejected, detail) = rejected(&config, item(id), Reason::WrongSubject).unwrap();
        assert!(!rejected, "{id}: {detail}");
    }
    let (rejected, detail) = rejected(&config, item("k-alias-002"), Reason::WrongSubject).unwrap();
    assert!(rejected && detail.contains("not named"), "{detail}");
}
