//! The labelled mention set (`tests/data/mentions.json`, labelled by reading the
//! summaries it names) against the deterministic entity-resolution rules
//! (`relata_validate::resolve`): each rule's precision, and the clusters' pairwise
//! precision and recall. No model is asked; runs with the real-model pass, which downloads
//! the corpus. Floors are the figures measured when the test was written, less a margin
//! (BENCHMARKS.md §3f).

use std::collections::HashMap;

use relata_core::EntityType;
use relata_validate::resolve::{
    Apart, Join, JoinRule, Mention, Resolved, Undecided, clusters, resolve, undecided,
};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct MentionSet {
    mentions: Vec<Labelled>,
}

#[derive(Debug, Deserialize)]
struct Labelled {
    id: String,
    title: String,
    text: String,
    start: usize,
    #[serde(rename = "type")]
    entity_type: String,
    cluster: String,
    category: String,
}

#[test]
#[ignore = "needs the corpus: eval \"$(scripts/real-model.sh)\""]
fn real_model_corpus_mentions_join_by_rule_with_measured_precision() {
    let set: MentionSet = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/mentions.json"))
            .unwrap(),
    )
    .unwrap();
    let summaries = std::env::var("RELATA_REAL_MODEL_SUMMARIES")
        .expect("RELATA_REAL_MODEL_SUMMARIES (scripts/real-model.sh)");
    let data: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(summaries).unwrap()).unwrap();
    let text_of = |title: &str| data.get(title).and_then(|v| v["extract"].as_str());
    // The set itself: every mention is its document's bytes at its offset.
    for l in &set.mentions {
        let text = text_of(&l.title).unwrap_or_else(|| panic!("{}: no {}", l.id, l.title));
        assert_eq!(
            text.get(l.start..l.start + l.text.len()),
            Some(l.text.as_str()),
            "{}",
            l.id
        );
    }
    let clusters_in_set: std::collections::HashSet<&str> =
        set.mentions.iter().map(|l| l.cluster.as_str()).collect();
    assert!(
        set.mentions.len() >= 300 && clusters_in_set.len() >= 80,
        "the set's size"
    );

    let mentions: Vec<Mention> = set
        .mentions
        .iter()
        .map(|l| Mention {
            document: &l.title,
            title: Some(&l.title),
            text: &l.text,
            start: l.start,
            entity_type: l.entity_type.parse::<EntityType>().unwrap(),
        })
        .collect();
    let resolution = resolve(&mentions, text_of, &HashMap::new());
    let js = resolution.joins.clone();
    let gold = |i: usize| set.mentions[i].cluster.as_str();
    // The same-name joins the documents' descriptions withheld: right where the two are
    // two things.
    let mut apart_right: HashMap<Apart, (usize, usize)> = HashMap::new();
    for &(i, first, why) in &resolution.kept_apart {
        let e = apart_right.entry(why).or_default();
        e.1 += 1;
        e.0 += usize::from(gold(i) != gold(first));
        eprintln!(
            "  kept apart ({}): {} ({}) {:?} / {} ({}) {:?}{}",
            why.as_str(),
            set.mentions[first].text,
            set.mentions[first].title,
            resolution.described[first],
            set.mentions[i].text,
            set.mentions[i].title,
            resolution.described[i],
            if gold(i) == gold(first) {
                "  WRONG: one thing"
            } else {
                ""
            }
        );
    }
    for &why in Apart::ALL {
        let (right, all) = apart_right.get(&why).copied().unwrap_or_default();
        eprintln!("kept apart by {}: {right}/{all} two things", why.as_str());
    }
    let mut report = Vec::new();
    let mut per_rule: HashMap<JoinRule, (usize, usize)> = HashMap::new();
    for j in &js {
        let e = per_rule.entry(j.rule).or_default();
        e.1 += 1;
        if gold(j.a) == gold(j.b) {
            e.0 += 1;
        } else {
            report.push(format!(
                "{:?}: {} ({}) + {} ({})",
                j.rule,
                set.mentions[j.a].text,
                set.mentions[j.a].title,
                set.mentions[j.b].text,
                set.mentions[j.b].title
            ));
        }
    }
    let predicted = clusters(mentions.len(), &js);
    let (mut tp, mut fp, mut fneg) = (0u64, 0u64, 0u64);
    for a in 0..mentions.len() {
        for b in a + 1..mentions.len() {
            match (predicted[a] == predicted[b], gold(a) == gold(b)) {
                (true, true) => tp += 1,
                (true, false) => fp += 1,
                (false, true) => fneg += 1,
                _ => {}
            }
        }
    }
    let traps_joined = (0..mentions.len())
        .filter(|&i| set.mentions[i].category == "homonym_trap")
        .filter(|&i| {
            (0..mentions.len()).any(|k| predicted[k] == predicted[i] && gold(k) != gold(i))
        })
        .count();
    let b3 = |predicted: &[usize]| -> (f64, f64, f64) {
        let (mut p, mut r) = (0.0, 0.0);
        for i in 0..predicted.len() {
            let mine = (0..predicted.len()).filter(|&k| predicted[k] == predicted[i]);
            let both = mine.clone().filter(|&k| gold(k) == gold(i)).count() as f64;
            p += both / mine.count() as f64;
            r += both / (0..predicted.len()).filter(|&k| gold(k) == gold(i)).count() as f64;
        }
        let n = predicted.len() as f64;
        let (p, r) = (p / n, r / n);
        (p, r, 2.0 * p * r / (p + r))
    };
    for &rule in JoinRule::ALL {
        let only: Vec<_> = js.iter().filter(|j| j.rule == rule).copied().collect();
        let (p, r, f) = b3(&clusters(mentions.len(), &only));
        eprintln!(
            "{} alone: B-cubed precision {p:.3}, recall {r:.3}, F1 {f:.3}",
            rule.as_str()
        );
    }
    let (b3_p, b3_r, b3_f) = b3(&predicted);
    eprintln!("all rules: B-cubed precision {b3_p:.3}, recall {b3_r:.3}, F1 {b3_f:.3}");
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fneg).max(1) as f64;
    for &rule in JoinRule::ALL {
        let (right, all) = per_rule.get(&rule).copied().unwrap_or_default();
        eprintln!("{}: {right}/{all} joins right", rule.as_str());
    }
    eprintln!(
        "pairs: precision {precision:.3} ({tp}/{}), recall {recall:.3} ({tp}/{}); homonym traps joined to another thing: {traps_joined}",
        tp + fp,
        tp + fneg
    );
    for r in report.iter().take(20) {
        eprintln!("  wrong join: {r}");
    }
    // What the rules leave for a person (`relata entities undecided`): each pair listed,
    // whether it is one thing, and the recall if a person joined every right one.
    let resolved: Vec<Resolved> = mentions
        .iter()
        .enumerate()
        .map(|(i, m)| Resolved {
            entity: predicted[i] as i64,
            document: m.document,
            text: m.text,
            entity_type: m.entity_type,
        })
        .collect();
    let waiting = undecided(&resolved);
    let mut decided = js.clone();
    let mut listed_share: HashMap<Undecided, f64> = HashMap::new();
    for &why in Undecided::ALL {
        let listed: Vec<_> = waiting.iter().filter(|w| w.2 == why).collect();
        let right: Vec<_> = listed.iter().filter(|w| gold(w.3) == gold(w.4)).collect();
        listed_share.insert(why, right.len() as f64 / listed.len().max(1) as f64);
        eprintln!(
            "undecided {}: {} pairs listed, {} of them one thing",
            why.as_str(),
            listed.len(),
            right.len()
        );
        for w in &listed {
            eprintln!(
                "  {} {} ({}) / {} ({})",
                if gold(w.3) == gold(w.4) { "one" } else { "two" },
                set.mentions[w.3].text,
                set.mentions[w.3].title,
                set.mentions[w.4].text,
                set.mentions[w.4].title
            );
        }
        decided.extend(right.iter().map(|w| Join {
            a: w.3,
            b: w.4,
            rule: JoinRule::Person,
            evidence: None,
        }));
    }
    let after = clusters(mentions.len(), &decided);
    let (mut tp_after, mut all_after) = (0u64, 0u64);
    for a in 0..mentions.len() {
        for b in a + 1..mentions.len() {
            if gold(a) == gold(b) {
                all_after += 1;
                tp_after += u64::from(after[a] == after[b]);
            }
        }
    }
    let recall_after = tp_after as f64 / all_after.max(1) as f64;
    eprintln!(
        "pairs recalled once a person joins every right undecided pair: {recall_after:.3} ({tp_after}/{all_after})"
    );
    let share = |rule| {
        let (right, all) = per_rule.get(&rule).copied().unwrap_or_default();
        right as f64 / all.max(1) as f64
    };
    // Measured: alias_in_text 76/76 (53/53 before the naming phrases: "born", "often
    // shortened to", "most commonly referred to as" …, and ", or" after the title that
    // opens its text), short_name 36/36, same_name 373/376, kind_name 1/1 ("Amazon
    // River" to the Amazon two documents call a river); pairs 0.998 precise, 0.904
    // recalled; B-cubed F1 0.957; 6 homonym traps joined to another thing (45 before the
    // documents' descriptions were read, 26 before a mention whose document says nothing
    // stopped joining the first of two established things, 17 before rules version 4
    // read lists of a kind, the mention's own sentence under a title and the years that
    // date a work or an event, 10 before rules version 5 read a sentence's opening date,
    // spans of years and who made a work). The readings that say two things are two: 21
    // of 21 right (title 4/4, longer_name 8/8, kind 6/6, year 2/2, maker 1/1). A mention
    // kept apart as `unsaid` is not said to be another thing, only not known to be one of
    // them (6 of 7 are another thing): not held to that share.
    assert!(share(JoinRule::AliasInText) >= 0.95, "{report:?}");
    assert!(share(JoinRule::ShortName) >= 0.95, "{report:?}");
    assert!(share(JoinRule::SameName) >= 0.97, "{report:?}");
    assert!(
        per_rule
            .get(&JoinRule::KindName)
            .is_some_and(|&(right, _)| right >= 1)
            && share(JoinRule::KindName) >= 0.95,
        "{report:?}"
    );
    assert!(precision >= 0.99 && recall >= 0.89, "{precision} {recall}");
    assert!(b3_f >= 0.945, "B-cubed F1 {b3_f}");
    assert!(traps_joined <= 8, "{traps_joined} homonym traps joined");
    let (apart_ok, apart_all) = apart_right
        .iter()
        .filter(|(why, _)| **why != Apart::Unsaid)
        .fold((0, 0), |(r, a), (_, &(r2, a2))| (r + r2, a + a2));
    assert!(
        apart_all >= 19 && apart_ok * 10 >= apart_all * 9,
        "{apart_right:?}"
    );
    // Measured: listed for a person, described_apart 28 (4 one thing: the mentions kept
    // apart as `unsaid` against the thing they are), other_type 31 (0: the types were
    // right to keep them apart), surname 6 (3; 16 before a surname its own entity's full
    // name explains stopped being listed), fuller_name 10 (8), plural 3 (3), partial_name
    // 13 (5: three of its right pairs, "Notre-Dame", "Columbia University", "Macbeth",
    // are joined by the naming phrases that give them); recall 0.954 once a person joins
    // the right ones.
    assert!(
        listed_share[&Undecided::FullerName] >= 0.7,
        "{listed_share:?}"
    );
    assert!(listed_share[&Undecided::Plural] >= 0.75, "{listed_share:?}");
    assert!(listed_share[&Undecided::Surname] >= 0.4, "{listed_share:?}");
    assert!(
        listed_share[&Undecided::PartialName] >= 0.35,
        "{listed_share:?}"
    );
    assert!(recall_after >= recall + 0.03, "{recall_after} {recall}");
}
