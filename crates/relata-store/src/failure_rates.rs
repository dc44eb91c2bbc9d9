//! Validation failure rates over time, from the evidence record alone (no Prometheus
//! needed), and the doubling check that can page from cron: what `relata report` prints.
//!
//! Two rates, as in [`InvalidRate`](crate::InvalidRate):
//!
//! * **response-level**: responses with at least one rejection / responses. A response is a
//!   model call that returned content (outcome `accepted`, `partial`, `rejected` or
//!   `invalid_envelope`); transport and provider errors are not responses and are watched
//!   by other means.
//! * **row-level**: rejections / (rejections + accepted rows), where a whole-response
//!   rejection counts as one rejection.
//!
//! A rate is `None` when its denominator is zero: no traffic is not a 0% failure rate.
//!
//! Answers (`task = answer`) are recorded in their own table, not in `model_calls`, so
//! every query here unions them in: an answer whose model was asked is a response; it
//! failed when `degraded`; its rejections are its reasons; an answered or abstained one
//! counts as one accepted row. An answer that retrieved nothing asked no model and is
//! not a response.

use chrono::{DateTime, NaiveDate, Utc};
use relata_core::{Task, closed_enum};
use sqlx::Row;

use crate::error::Result;
use crate::{Store, parse_label};

/// Counts behind both rates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct FailureCounts {
    pub responses: i64,
    pub responses_with_rejection: i64,
    pub rejections: i64,
    pub accepted_rows: i64,
}

impl FailureCounts {
    pub fn response_rate(&self) -> Option<f64> {
        ratio(self.responses_with_rejection, self.responses)
    }

    pub fn row_rate(&self) -> Option<f64> {
        ratio(self.rejections, self.rejections + self.accepted_rows)
    }

    fn add(&mut self, o: &FailureCounts) {
        self.responses += o.responses;
        self.responses_with_rejection += o.responses_with_rejection;
        self.rejections += o.rejections;
        self.accepted_rows += o.accepted_rows;
    }
}

fn ratio(n: i64, d: i64) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}

/// Rejections with one reason.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReasonCount {
    pub reason: String,
    pub count: i64,
}

/// One line of the report: a UTC day, a task, a prompt version and a model.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DriftRow {
    pub day: NaiveDate,
    pub task: Task,
    pub prompt_version: String,
    pub model: String,
    #[serde(flatten)]
    pub counts: FailureCounts,
    pub response_rate: Option<f64>,
    pub row_rate: Option<f64>,
    /// The most frequent rejection reasons, most frequent first.
    pub top_reasons: Vec<ReasonCount>,
}

closed_enum! {
    /// What the doubling check concluded for one task.
    pub enum DoublingVerdict: "doubling verdict" {
        /// The latest day's rate is more than twice its baseline, with enough volume.
        Doubled = "doubled",
        /// Enough volume, not doubled.
        Steady = "steady",
        /// The latest day has fewer responses than the minimum volume.
        LowVolume = "low_volume",
        /// The baseline days together have fewer responses than the minimum volume.
        NoBaseline = "no_baseline",
    }
}

closed_enum! {
    /// Which rate doubled.
    pub enum RateLevel: "rate level" {
        Response = "response",
        Row = "row",
    }
}

/// The doubling check of one task.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DoublingCheck {
    pub task: Task,
    pub verdict: DoublingVerdict,
    /// The levels whose rate doubled (empty unless `verdict` is `doubled`).
    pub doubled: Vec<RateLevel>,
    /// The 24 hours before `at`.
    pub latest: FailureCounts,
    /// The `baseline_days` × 24 hours before that, pooled.
    pub baseline: FailureCounts,
    pub latest_response_rate: Option<f64>,
    pub baseline_response_rate: Option<f64>,
    pub latest_row_rate: Option<f64>,
    pub baseline_row_rate: Option<f64>,
}

/// Decide the doubling check from the counts (pure; see [`Store::check_doubling`]).
///
/// Volume is counted in responses: the latest day needs `min_volume`, and so do the
/// baseline days together (a baseline of a handful of calls is noise, not a baseline).
/// A rate doubles when it is strictly more than twice the baseline rate; a baseline rate
/// of 0 therefore doubles at the first failure — it is a change, and worth a look.
pub fn judge_doubling(
    task: Task,
    latest: FailureCounts,
    baseline: FailureCounts,
    min_volume: i64,
) -> DoublingCheck {
    let mut doubled = Vec::new();
    let verdict = if latest.responses < min_volume {
        DoublingVerdict::LowVolume
    } else if baseline.responses < min_volume {
        DoublingVerdict::NoBaseline
    } else {
        let pairs = [
            (
                RateLevel::Response,
                latest.response_rate(),
                baseline.response_rate(),
            ),
            (RateLevel::Row, latest.row_rate(), baseline.row_rate()),
        ];
        for (level, now, base) in pairs {
            if now.zip(base).is_some_and(|(now, base)| now > 2.0 * base) {
                doubled.push(level);
            }
        }
        if doubled.is_empty() {
            DoublingVerdict::Steady
        } else {
            DoublingVerdict::Doubled
        }
    };
    DoublingCheck {
        task,
        verdict,
        doubled,
        latest,
        baseline,
        latest_response_rate: latest.response_rate(),
        baseline_response_rate: baseline.response_rate(),
        latest_row_rate: latest.row_rate(),
        baseline_row_rate: baseline.row_rate(),
    }
}

// Failure counts per model call group, answers included. $1 from, $2 to (half-open
// [from, to)).
macro_rules! call_counts {
    ($group:literal) => {
        concat!(
            "WITH mc AS (
                 SELECT id, started_at, task, prompt_version, model, outcome FROM model_calls
                 WHERE started_at >= $1 AND started_at < $2
                   AND outcome IN ('accepted', 'partial', 'rejected', 'invalid_envelope')),
             rej AS (
                 SELECT call_id, count(*) AS n FROM invalid_outputs
                 WHERE call_id IN (SELECT id FROM mc) GROUP BY call_id),
             acc AS (
                 SELECT call_id, count(*) AS n FROM (
                     SELECT call_id FROM entities UNION ALL SELECT call_id FROM claims
                     UNION ALL SELECT call_id FROM claim_relations) rows
                 WHERE call_id IN (SELECT id FROM mc) GROUP BY call_id),
             calls AS (
                 SELECT mc.started_at, mc.task, mc.prompt_version, mc.model,
                        mc.outcome <> 'accepted' AS failed,
                        coalesce(rej.n, 0) AS rejections, coalesce(acc.n, 0) AS accepted
                 FROM mc
                 LEFT JOIN rej ON rej.call_id = mc.id
                 LEFT JOIN acc ON acc.call_id = mc.id
                 UNION ALL
                 SELECT a.started_at, 'answer', a.prompt_version, a.model,
                        a.status = 'degraded',
                        cardinality(a.reasons)::bigint,
                        (a.status <> 'degraded')::int::bigint
                 FROM answers a
                 WHERE a.model IS NOT NULL AND a.started_at >= $1 AND a.started_at < $2)
             SELECT ",
            $group,
            ", count(*), count(*) FILTER (WHERE c.failed),
                    coalesce(sum(c.rejections), 0)::bigint, coalesce(sum(c.accepted), 0)::bigint
             FROM calls c
             GROUP BY ",
            $group,
            " ORDER BY ",
            $group
        )
    };
}

impl Store {
    /// The failure rates of every (UTC day, task, prompt version, model) with responses in
    /// `[from, to)`, ordered by day, with the `top` most frequent rejection reasons each.
    pub async fn drift_report(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        top: usize,
    ) -> Result<Vec<DriftRow>> {
        let rows = sqlx::query(call_counts!(
            "(c.started_at AT TIME ZONE 'UTC')::date, c.task, c.prompt_version, c.model"
        ))
        .bind(from)
        .bind(to)
        .fetch_all(&self.pool)
        .await?;
        let reasons = sqlx::query(
            "SELECT (m.started_at AT TIME ZONE 'UTC')::date, m.task, m.prompt_version, m.model,
                    i.reason, count(*)
             FROM invalid_outputs i JOIN model_calls m ON m.id = i.call_id
             WHERE m.started_at >= $1 AND m.started_at < $2
             GROUP BY 1, 2, 3, 4, 5
             UNION ALL
             SELECT (a.started_at AT TIME ZONE 'UTC')::date, 'answer', a.prompt_version,
                    a.model, r.reason, count(*)
             FROM answers a CROSS JOIN unnest(a.reasons) AS r(reason)
             WHERE a.model IS NOT NULL AND a.started_at >= $1 AND a.started_at < $2
             GROUP BY 1, 2, 3, 4, 5
             ORDER BY 1, 2, 3, 4, 6 DESC, 5",
        )
        .bind(from)
        .bind(to)
        .fetch_all(&self.pool)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let counts = counts_at(r, 4)?;
            out.push(DriftRow {
                day: r.try_get(0)?,
                task: parse_label(r.try_get(1)?)?,
                prompt_version: r.try_get(2)?,
                model: r.try_get(3)?,
                response_rate: counts.response_rate(),
                row_rate: counts.row_rate(),
                counts,
                top_reasons: Vec::new(),
            });
        }
        for r in &reasons {
            let day: NaiveDate = r.try_get(0)?;
            let task = parse_label(r.try_get(1)?)?;
            let prompt: String = r.try_get(2)?;
            let model: String = r.try_get(3)?;
            let row = out.iter_mut().find(|x| {
                x.day == day && x.task == task && x.prompt_version == prompt && x.model == model
            });
            if let Some(row) = row.filter(|row| row.top_reasons.len() < top) {
                row.top_reasons.push(ReasonCount {
                    reason: r.try_get(4)?,
                    count: r.try_get(5)?,
                });
            }
        }
        Ok(out)
    }

    /// The doubling check at `at`, per task with responses: the 24 hours before `at`
    /// against the `baseline_days` × 24 hours before those (see [`judge_doubling`]).
    /// Prompt versions and models of a task are pooled: a prompt or model change is exactly
    /// what the check exists to catch, and a new version has no baseline of its own.
    pub async fn check_doubling(
        &self,
        at: DateTime<Utc>,
        baseline_days: u32,
        min_volume: i64,
    ) -> Result<Vec<DoublingCheck>> {
        let day = chrono::Duration::hours(24);
        let latest_from = at - day;
        let baseline_from = latest_from - day * i32::try_from(baseline_days.max(1)).unwrap_or(1);
        let latest = self.counts_by_task(latest_from, at).await?;
        let baseline = self.counts_by_task(baseline_from, latest_from).await?;
        let mut out = Vec::new();
        for task in Task::ALL {
            let l = latest
                .iter()
                .find(|(t, _)| t == task)
                .map(|(_, c)| *c)
                .unwrap_or_default();
            let b = baseline
                .iter()
                .find(|(t, _)| t == task)
                .map(|(_, c)| *c)
                .unwrap_or_default();
            if l.responses == 0 && b.responses == 0 {
                continue;
            }
            out.push(judge_doubling(*task, l, b, min_volume));
        }
        Ok(out)
    }

    /// The failure counts of every task in `[from, to)`, pooled: what `relata status`
    /// shows for the last 24 hours.
    pub(crate) async fn failure_counts(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<FailureCounts> {
        let mut total = FailureCounts::default();
        for (_, c) in self.counts_by_task(from, to).await? {
            total.add(&c);
        }
        Ok(total)
    }

    async fn counts_by_task(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<(Task, FailureCounts)>> {
        let rows = sqlx::query(call_counts!("c.task"))
            .bind(from)
            .bind(to)
            .fetch_all(&self.pool)
            .await?;
        let mut out: Vec<(Task, FailureCounts)> = Vec::new();
        for r in &rows {
            let task = parse_label(r.try_get(0)?)?;
            let c = counts_at(r, 1)?;
            match out.iter_mut().find(|(t, _)| *t == task) {
                Some((_, acc)) => acc.add(&c),
                None => out.push((task, c)),
            }
        }
        Ok(out)
    }
}

fn counts_at(r: &sqlx::postgres::PgRow, at: usize) -> Result<FailureCounts> {
    Ok(FailureCounts {
        responses: r.try_get(at)?,
        responses_with_rejection: r.try_get(at + 1)?,
        rejections: r.try_get(at + 2)?,
        accepted_rows: r.try_get(at + 3)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(responses: i64, with_rej: i64, rejections: i64, accepted: i64) -> FailureCounts {
        FailureCounts {
            responses,
            responses_with_rejection: with_rej,
            rejections,
            accepted_rows: accepted,
        }
    }

    #[test]
    fn steady_rate_is_steady() {
        let v = judge_doubling(
            Task::Extract,
            c(300, 30, 30, 270),
            c(2100, 210, 210, 1890),
            200,
        );
        assert_eq!(v.verdict, DoublingVerdict::Steady);
        assert!(v.doubled.is_empty());
    }

    #[test]
    fn doubling_needs_strictly_more_than_twice() {
        let twice = judge_doubling(Task::Extract, c(300, 60, 0, 0), c(2100, 210, 0, 0), 200);
        assert_eq!(twice.verdict, DoublingVerdict::Steady);
        let more = judge_doubling(Task::Extract, c(300, 61, 0, 0), c(2100, 210, 0, 0), 200);
        assert_eq!(more.verdict, DoublingVerdict::Doubled);
        assert_eq!(more.doubled, vec![RateLevel::Response]);
    }

    #[test]
    fn volume_gates_the_verdict() {
        let low = judge_doubling(Task::Classify, c(199, 199, 199, 0), c(2100, 10, 10, 0), 200);
        assert_eq!(low.verdict, DoublingVerdict::LowVolume);
        let nobase = judge_doubling(Task::Classify, c(500, 400, 0, 0), c(150, 1, 0, 0), 200);
        assert_eq!(nobase.verdict, DoublingVerdict::NoBaseline);
    }

    #[test]
    fn row_level_doubling_is_reported() {
        let v = judge_doubling(
            Task::Extract,
            c(300, 30, 90, 210),
            c(2100, 210, 210, 1890),
            200,
        );
        assert_eq!(v.verdict, DoublingVerdict::Doubled);
        assert_eq!(v.doubled, vec![RateLevel::Row]);
    }
}
