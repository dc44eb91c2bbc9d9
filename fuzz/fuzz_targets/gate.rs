//! Fuzz the gate's decoder and layers with arbitrary bytes.
//!
//! Input layout: byte 0 picks the task (even: extract, odd: classify); for extract the
//! rest is `source \0 response` when it holds a NUL (so the fuzzer can also steer the
//! source text), otherwise all response against a fixed source. Invariants checked beyond
//! "does not panic": every accepted claim's quote is the source's own text at its
//! offsets, a whole-response rejection has no rows, and every detail is bounded.
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run gate -- -max_total_time=180` (from the repo root).

#![no_main]

use libfuzzer_sys::fuzz_target;
use relata_core::Handle;
use relata_validate::{
    ClassifyInput, GateConfig, MAX_DETAIL_CHARS, judge_classify, judge_extract,
};

const SOURCE: &str = "Marie Curie was born in Warsaw in 1867.\n\nShe moved to  Paris in 1891. \
    A caf\u{e9} in Montr\u{e9}al serves a drink; about 45% order it.";

fn check_rejections<R>(j: &relata_validate::Judgement<R>) {
    if j.response_rejection().is_some() {
        assert!(j.rows().is_empty());
    }
    for r in j.rejections() {
        assert!(r.detail.chars().count() <= MAX_DETAIL_CHARS, "{}", r.detail);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let config = GateConfig::default();
    if sel % 2 == 0 {
        let (source, raw) = match rest.iter().position(|&b| b == 0) {
            Some(p) => match std::str::from_utf8(&rest[..p]) {
                Ok(s) => (s, &rest[p + 1..]),
                Err(_) => (SOURCE, rest),
            },
            None => (SOURCE, rest),
        };
        let j = judge_extract(&config, source, raw);
        check_rejections(&j);
        for c in j.accepted().claims() {
            let (s, e) = c.quote_span();
            assert!(s < e && e <= source.len());
            assert_eq!(c.quote(), &source[s..e]);
        }
    } else {
        let input = ClassifyInput {
            handles: (1..=4).map(Handle::nth).collect(),
            pairs: [(1, 2), (1, 3), (2, 4)]
                .into_iter()
                .map(|(a, b)| (Handle::nth(a), Handle::nth(b)))
                .collect(),
        };
        let j = judge_classify(&config, &input, rest);
        check_rejections(&j);
        for r in j.accepted().relations() {
            assert!(input.pairs.contains(&r.pair()));
        }
    }
});
