//! Judging a full-size extract response: 50 claims, close to the 64 KiB bound, against a
//! 20 KB source. Target: ≤ 200 µs per response.
//!
//! `cargo bench -p relata-validate --bench gate`

#![allow(clippy::unwrap_used)] // benchmark set-up: a failure is a broken benchmark

use criterion::{Criterion, criterion_group, criterion_main};
use relata_validate::{GateConfig, Verdict, judge_extract};
use std::hint::black_box;

const WORDS: &[&str] = &[
    "the",
    "council",
    "approved",
    "a",
    "new",
    "harbour",
    "budget",
    "after",
    "long",
    "debate",
    "about",
    "river",
    "trade",
    "and",
    "its",
    "cost",
    "to",
    "local",
    "farmers",
    "while",
    "engineers",
    "warned",
    "that",
    "bridge",
    "repairs",
    "would",
    "take",
    "several",
    "years",
    "in",
    "northern",
    "district",
    "of",
    "Lisbon",
    "Porto",
    "Coimbra",
];

/// A deterministic ~20 KB source: sentences of pseudo-random words, with figures,
/// paragraph breaks and a few double spaces.
fn source() -> String {
    let mut s = String::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut n = 0;
    while s.len() < 20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let w = WORDS[(x % WORDS.len() as u64) as usize];
        s.push_str(w);
        n += 1;
        s.push_str(match n % 97 {
            0 => ".\n\n",
            13 => "  ",
            _ if n % 17 == 0 => ", in 19",
            _ if n % 17 == 1 => "84 ",
            _ => " ",
        });
    }
    s
}

fn response(source: &str) -> String {
    let entities: Vec<String> = ["Lisbon", "Porto", "Coimbra", "Harbour Council"]
        .iter()
        .map(|n| format!(r#"{{"name":"{n}","type":"location"}}"#))
        .collect();
    let words: Vec<&str> = source.split_whitespace().collect();
    let mut claims = Vec::new();
    for i in 0..50 {
        let start = (i * 37) % (words.len() - 120);
        // ~100 words of source, re-spaced so that normalisation has work to do.
        let quote = words[start..start + 100].join("  ");
        // Most of the quote's words, so that the support check keeps it (and does its
        // whole work: every word looked up).
        // Ending on a content word: a statement that ends on "and" or "of" is cut
        // mid-phrase, and the gate rejects it.
        let mut end = start + 70;
        while matches!(
            words[end - 1]
                .trim_end_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
                .as_str(),
            "the" | "a" | "and" | "its" | "to" | "of"
        ) {
            end -= 1;
        }
        let statement = words[start + 3..end].join(" ");
        claims.push(format!(
            r#"{{"statement":{},"quote":{},"subject":"Lisbon"}}"#,
            serde_json::to_string(&statement).unwrap(),
            serde_json::to_string(&quote).unwrap()
        ));
    }
    format!(
        "{{\"entities\":[{}],\"claims\":[{}]}}",
        entities.join(","),
        claims.join(",\n")
    )
}

fn bench(c: &mut Criterion) {
    let source = source();
    let raw = response(&source);
    assert!(raw.len() <= 64 * 1024, "{}", raw.len());
    assert!(raw.len() > 56 * 1024, "{}", raw.len());
    let config = GateConfig::default();
    let j = judge_extract(&config, &source, raw.as_bytes());
    assert_eq!(j.verdict(), Verdict::Accepted, "{:?}", j.rejections());
    assert_eq!(j.accepted().claims().len(), 50);
    println!(
        "source {} bytes, response {} bytes, 50 claims",
        source.len(),
        raw.len()
    );
    c.bench_function("judge_extract 64KiB/50 claims/20KB source", |b| {
        b.iter(|| {
            judge_extract(
                black_box(&config),
                black_box(&source),
                black_box(raw.as_bytes()),
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
