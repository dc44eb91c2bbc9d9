//! The deployment files that no program of ours reads: the Grafana dashboard must stay
//! valid JSON Grafana can lay out (unique panel ids, no two panels on the same cells), and
//! keep charting every task, answers included.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use serde_json::Value;

fn dashboard() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/grafana/dashboards/relata.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("relata.json is not valid JSON: {e}"))
}

fn panels(d: &Value) -> &Vec<Value> {
    d["panels"].as_array().expect("a panels array")
}

/// Panels whose grid cells overlap: Grafana moves one of them, silently.
fn overlaps(panels: &[Value]) -> Vec<(i64, i64)> {
    let rect = |p: &Value| {
        let g = &p["gridPos"];
        let n = |k: &str| g[k].as_i64().unwrap();
        (n("x"), n("y"), n("x") + n("w"), n("y") + n("h"))
    };
    let mut out = Vec::new();
    for (i, a) in panels.iter().enumerate() {
        for b in &panels[i + 1..] {
            let (ax0, ay0, ax1, ay1) = rect(a);
            let (bx0, by0, bx1, by1) = rect(b);
            if ax0 < bx1 && bx0 < ax1 && ay0 < by1 && by0 < ay1 {
                out.push((a["id"].as_i64().unwrap(), b["id"].as_i64().unwrap()));
            }
        }
    }
    out
}

#[test]
fn the_dashboard_is_valid_with_unique_ids_and_no_overlapping_panels() {
    let d = dashboard();
    let panels = panels(&d);
    let mut ids: Vec<i64> = panels.iter().map(|p| p["id"].as_i64().unwrap()).collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate panel ids");
    assert_eq!(overlaps(panels), [], "overlapping panels");
    for p in panels {
        for t in p["targets"].as_array().unwrap() {
            assert!(t["expr"].as_str().is_some_and(|e| !e.is_empty()), "{p}");
        }
    }
}

#[test]
fn the_overlap_check_catches_two_panels_on_the_same_cells() {
    let p = |id: i64, x: i64, y: i64| serde_json::json!({"id": id, "gridPos": {"x": x, "y": y, "w": 12, "h": 8}});
    assert_eq!(overlaps(&[p(1, 0, 0), p(2, 12, 0), p(3, 0, 8)]), []);
    assert_eq!(overlaps(&[p(1, 0, 0), p(2, 6, 4)]), [(1, 2)]);
}

#[test]
fn the_dashboard_charts_answers() {
    let d = dashboard();
    let exprs: Vec<&str> = panels(&d)
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap())
        .filter_map(|t| t["expr"].as_str())
        .collect();
    for needle in [
        "relata_answers_total",
        r#"relata_model_invalid_output_total{task="answer"}"#,
        "relata_answer_duration_seconds_bucket",
    ] {
        assert!(
            exprs.iter().any(|e| e.contains(needle)),
            "no panel charts {needle}"
        );
    }
}
