//! `relata report`: validation failure rates by day, task, prompt version and model, from
//! the store; `--check-doubling` turns it into an alert usable from cron.

use anyhow::Result;
use chrono::{DateTime, Duration, Utc};
use relata_store::{DoublingCheck, DoublingVerdict, Store};

use crate::config::Config;
use crate::out::outln;

/// Exit code of `--check-doubling` when a task's failure rate doubled.
pub const EXIT_DOUBLED: u8 = 1;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Days of history to show (UTC days, the current one included); 1 to 3650.
    #[arg(long, default_value_t = 14, value_parser = clap::value_parser!(u32).range(1..=3650))]
    pub days: u32,
    /// Rejection reasons shown per line; 1 to 20.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=20))]
    pub top: u16,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Exit 1 (and say why) when the failure rate of the last 24 hours is more than twice
    /// the baseline's, with enough volume; exit 0 otherwise. For cron.
    #[arg(long)]
    pub check_doubling: bool,
    /// --check-doubling: the baseline is this many 24-hour windows before the last one;
    /// 1 to 365.
    #[arg(long, default_value_t = 7, requires = "check_doubling",
          value_parser = clap::value_parser!(u32).range(1..=365))]
    pub baseline_days: u32,
    /// --check-doubling: the fewest responses the last 24 hours (and the baseline, pooled)
    /// must hold for a verdict; below it the check stays silent. 1 to 1000000000.
    #[arg(long, default_value_t = 200, requires = "check_doubling",
          value_parser = clap::value_parser!(i64).range(1..=1_000_000_000))]
    pub min_volume: i64,
    /// --check-doubling: evaluate as of this time (RFC 3339) instead of now.
    #[arg(long, requires = "check_doubling")]
    pub at: Option<DateTime<Utc>>,
}

pub async fn run(config: &Config, args: ReportArgs) -> Result<u8> {
    let store = crate::pipeline::store(config).await?;
    if args.check_doubling {
        return check(&store, &args).await;
    }
    let now = Utc::now();
    let today = now.date_naive().and_hms_opt(0, 0, 0).map(|t| t.and_utc());
    let from = today.unwrap_or(now) - Duration::days(i64::from(args.days) - 1);
    let rows = store
        .drift_report(from, now + Duration::seconds(1), usize::from(args.top))
        .await?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(0);
    }
    if rows.is_empty() {
        outln!("no model responses since {}", from.date_naive())?;
        return Ok(0);
    }
    outln!(
        "{:<10} {:<8} {:<14} {:<20} {:>9} {:>10} {:>9} {:>10}  top reasons",
        "day",
        "task",
        "prompt",
        "model",
        "responses",
        "resp.fail",
        "rows",
        "row.fail"
    )?;
    for r in &rows {
        let reasons: Vec<String> = r
            .top_reasons
            .iter()
            .map(|x| format!("{} {}", x.reason, x.count))
            .collect();
        outln!(
            "{:<10} {:<8} {:<14} {:<20} {:>9} {:>10} {:>9} {:>10}  {}",
            r.day.to_string(),
            r.task.as_str(),
            r.prompt_version,
            r.model,
            r.counts.responses,
            pct(r.response_rate),
            r.counts.rejections + r.counts.accepted_rows,
            pct(r.row_rate),
            reasons.join(", ")
        )?;
    }
    Ok(0)
}

async fn check(store: &Store, args: &ReportArgs) -> Result<u8> {
    let at = args.at.unwrap_or_else(Utc::now);
    let checks = store
        .check_doubling(at, args.baseline_days, args.min_volume)
        .await?;
    let fired = checks.iter().any(|c| c.verdict == DoublingVerdict::Doubled);
    if args.json {
        let out = serde_json::json!({
            "at": at,
            "baseline_days": args.baseline_days,
            "min_volume": args.min_volume,
            "doubled": fired,
            "tasks": checks,
        });
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
    } else if checks.is_empty() {
        outln!(
            "no model responses in the last {} days: nothing to check",
            args.baseline_days + 1
        )?;
    } else {
        for c in &checks {
            outln!("{}", explain(c, args))?;
        }
    }
    Ok(if fired { EXIT_DOUBLED } else { 0 })
}

fn explain(c: &DoublingCheck, args: &ReportArgs) -> String {
    let rates = format!(
        "response-level {} (baseline {}), row-level {} (baseline {}); {} responses in the last 24 h, {} in the {} days before",
        pct(c.latest_response_rate),
        pct(c.baseline_response_rate),
        pct(c.latest_row_rate),
        pct(c.baseline_row_rate),
        c.latest.responses,
        c.baseline.responses,
        args.baseline_days
    );
    match c.verdict {
        DoublingVerdict::Doubled => {
            let levels: Vec<&str> = c.doubled.iter().map(|l| l.as_str()).collect();
            format!(
                "DOUBLED {}: the {} failure rate of the last 24 h is more than twice its {}-day baseline: {rates}. See `relata report` for the prompt versions, models and reasons.",
                c.task,
                levels.join(" and "),
                args.baseline_days
            )
        }
        DoublingVerdict::Steady => format!("ok {}: not doubled: {rates}", c.task),
        DoublingVerdict::LowVolume => format!(
            "ok {}: fewer than {} responses in the last 24 h, no verdict: {rates}",
            c.task, args.min_volume
        ),
        DoublingVerdict::NoBaseline => format!(
            "ok {}: fewer than {} responses in the baseline, no verdict: {rates}",
            c.task, args.min_volume
        ),
    }
}

fn pct(r: Option<f64>) -> String {
    r.map_or_else(|| "-".to_owned(), |r| format!("{:.1}%", r * 100.0))
}
