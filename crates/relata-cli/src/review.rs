//! `relata review`, `relata evidence` and `relata promote`: the promotion gate from the
//! command line.

use anyhow::{Context, Result, bail};
use relata_core::{CandidateId, Decision, PromotionState, RowKind};
use relata_store::{ChainHead, ErrorKind, ReviewFilter, Via};

use crate::config::Config;
use crate::out::outln;
use crate::pipeline::store;

/// Exit code when a reviewer's decision was refused (stale, changed, already decided,
/// unknown candidate, or an evidence log that does not end where its head says) or
/// `evidence verify` found a mismatch.
pub const EXIT_REFUSED: u8 = 1;

#[derive(Debug, clap::Subcommand)]
pub enum ReviewCommand {
    /// Candidates waiting for a person (or in another state), oldest first.
    List {
        /// entity, claim, relation or join.
        #[arg(long)]
        kind: Option<RowKind>,
        /// Only candidates from documents of this source.
        #[arg(long)]
        source: Option<String>,
        /// pending (default), promoted, rejected or denied.
        #[arg(long, default_value = "pending")]
        state: PromotionState,
        /// At most this many.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(i64).range(1..=100_000))]
        limit: i64,
        /// Print a JSON array of objects with id, kind, state, reasons and the row.
        #[arg(long)]
        json: bool,
    },
    /// One candidate: the row, its quote marked in its chunk, its warnings, the model call
    /// that proposed it and every decision about it.
    Show {
        /// claim:42, entity:7, relation:9 or join:3.
        id: CandidateId,
        #[arg(long)]
        json: bool,
    },
    /// Promote pending candidates in a reviewer's name. All or none: one refused
    /// candidate (stale, changed, already decided) refuses the lot, naming each.
    Approve {
        #[arg(required = true)]
        ids: Vec<CandidateId>,
        /// The reviewer: a name from `[review] reviewers` / RELATA_REVIEWERS. The evidence
        /// record also names the operating-system user and host this runs as.
        #[arg(long)]
        by: String,
        #[arg(long)]
        note: Option<String>,
    },
    /// Reject pending candidates in a reviewer's name, saying why.
    Reject {
        #[arg(required = true)]
        ids: Vec<CandidateId>,
        #[arg(long)]
        by: String,
        #[arg(long)]
        note: String,
    },
    /// Issue a sign-in token for the review page (`relata serve`, `/review`) and print it
    /// once. Only its sha256 is stored; issuing a new one revokes the reviewer's old one.
    Token {
        /// The reviewer: a name from `[review] reviewers` / RELATA_REVIEWERS.
        #[arg(long)]
        by: String,
        /// Revoke the reviewer's token and issue none: their sessions end at their next
        /// request, and nobody signs in as them until a new token is issued.
        #[arg(long)]
        revoke: bool,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum EvidenceCommand {
    /// Recompute the evidence chain, every candidate's hash and every promotion state, and
    /// check every document revision, chunk and claim quote against the hashes and
    /// offsets they were stored with; exit 1 naming the first that does not match. Prints
    /// the chain's head (SEQ:SHA256) to keep outside the database.
    Verify {
        /// A head printed by an earlier verify (SEQ:SHA256): exit 1 unless record SEQ is
        /// still in the log with that hash, i.e. the log up to it was not rewritten.
        #[arg(long, value_name = "SEQ:SHA256")]
        expect_head: Option<ChainHead>,
        #[arg(long)]
        json: bool,
    },
    /// The last decisions, oldest first (of one candidate with --id).
    History {
        #[arg(long)]
        id: Option<CandidateId>,
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(i64).range(1..=1_000_000))]
        limit: i64,
        #[arg(long)]
        json: bool,
    },
}

pub async fn review(config: &Config, cmd: ReviewCommand) -> Result<u8> {
    // The reviewer is checked before anything connects: an unknown name never reaches
    // the store.
    let (decision, ids, reviewer, note) = match cmd {
        ReviewCommand::List {
            kind,
            source,
            state,
            limit,
            json,
        } => return list(config, kind, source, state, limit, json).await,
        ReviewCommand::Show { id, json } => return show(config, id, json).await,
        ReviewCommand::Token { by, revoke } => return token(config, &by, revoke).await,
        ReviewCommand::Approve { ids, by, note } => (Decision::Approve, ids, by, note),
        ReviewCommand::Reject { ids, by, note } => (Decision::Reject, ids, by, Some(note)),
    };
    let reviewer = config
        .reviewers()?
        .get(&reviewer)
        .map_err(|e| anyhow::anyhow!("--by: {e}"))?;
    if decision == Decision::Reject && note.as_deref().is_none_or(|n| n.trim().is_empty()) {
        bail!("--note: a rejection must say why");
    }
    let store = store(config).await?;
    match store
        .review_decide(
            &ids,
            decision,
            &reviewer,
            note.as_deref(),
            &command_line_via(),
        )
        .await
    {
        Ok(done) => {
            for d in &done {
                outln!(
                    "{} {} by {} (evidence {})",
                    d.id,
                    d.state,
                    reviewer,
                    d.evidence_seq
                )?;
            }
            Ok(0)
        }
        Err(e) if e.kind() == ErrorKind::Refused => {
            if let relata_store::StoreError::ReviewRefused(refusals) = &e {
                for r in refusals {
                    eprintln!("refused: {r}");
                }
            }
            eprintln!("nothing was {}d", decision);
            Ok(EXIT_REFUSED)
        }
        Err(e) if e.kind() == ErrorKind::ChainBroken => {
            eprintln!("refused: {e}");
            Ok(EXIT_REFUSED)
        }
        Err(e) => Err(e).context("recording the decision"),
    }
}

/// How a decision made here is recorded beside `--by`, which is whatever was typed: the
/// operating-system user and host `relata` runs as. Not proof against a database user
/// (who can write any record), but it tells an honest log's reader who was at the
/// keyboard of which machine.
fn command_line_via() -> Via {
    Via::CommandLine {
        os_user: os_user(),
        host: host_name(),
    }
}

/// The name of the process's real user: its uid (from the kernel, which the process
/// cannot choose) looked up in `/etc/passwd`; else `$USER` or `$LOGNAME` (in a container
/// whose uid has no entry), else the bare uid.
fn os_user() -> String {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().next())
                .map(str::to_owned)
        });
    let named = uid.as_deref().and_then(|uid| {
        std::fs::read_to_string("/etc/passwd")
            .ok()
            .and_then(|passwd| {
                passwd.lines().find_map(|l| {
                    let mut f = l.split(':');
                    let name = f.next()?;
                    (f.nth(1)? == uid && !name.is_empty()).then(|| name.to_owned())
                })
            })
    });
    named
        .or_else(|| {
            ["USER", "LOGNAME"]
                .iter()
                .filter_map(|k| std::env::var(k).ok())
                .map(|v| v.trim().to_owned())
                .find(|v| !v.is_empty())
        })
        .or_else(|| uid.map(|u| format!("uid {u}")))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The host's name as the kernel has it (what `hostname` prints), else `/etc/hostname`
/// or `$HOSTNAME`.
fn host_name() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .chain(std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .find(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

async fn list(
    config: &Config,
    kind: Option<RowKind>,
    source: Option<String>,
    state: PromotionState,
    limit: i64,
    json: bool,
) -> Result<u8> {
    let store = store(config).await?;
    let items = store
        .review_list(&ReviewFilter {
            kind,
            source,
            state,
            limit,
        })
        .await?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&items)?)?;
        return Ok(0);
    }
    if items.is_empty() {
        outln!("no {state} candidates")?;
    }
    for c in &items {
        let what = summary(&c.row);
        let stale = if c.stale { " [stale]" } else { "" };
        outln!("{:<16} {}{stale}", c.id.to_string(), what)?;
        if !c.reasons.is_empty() {
            outln!("                 why: {}", c.reasons.join("; "))?;
        }
    }
    Ok(0)
}

/// One line about a row.
fn summary(row: &serde_json::Value) -> String {
    let s = |k: &str| row.get(k).and_then(|v| v.as_str()).unwrap_or("");
    let text = if !s("verdict").is_empty() {
        format!(
            "{} ({}) and {} ({}) are one thing, says the model (evidence {:?})",
            s("name_a"),
            s("type_a"),
            s("name_b"),
            s("type_b"),
            s("quote")
        )
    } else if !s("statement").is_empty() {
        format!("{:?} (quote {:?})", s("statement"), s("quote"))
    } else if !s("name").is_empty() {
        format!("{} ({})", s("name"), s("type"))
    } else if !s("relation").is_empty() {
        format!(
            "{:?} {} {:?}",
            s("statement_a"),
            s("relation"),
            s("statement_b")
        )
    } else {
        row.to_string()
    };
    relata_core::text::cut(&text, 200).to_owned()
}

async fn show(config: &Config, id: CandidateId, json: bool) -> Result<u8> {
    let store = store(config).await?;
    let Some(d) = store.review_show(id).await? else {
        eprintln!("{id}: no such candidate");
        return Ok(EXIT_REFUSED);
    };
    if json {
        outln!("{}", serde_json::to_string_pretty(&d)?)?;
        return Ok(0);
    }
    let c = &d.candidate;
    outln!(
        "{}  state: {}{}",
        c.id,
        c.state,
        if c.stale {
            "  (stale: its document changed)"
        } else {
            ""
        }
    )?;
    if let Some(rule) = &c.rule {
        outln!("policy rule: {rule}")?;
    }
    for r in &c.reasons {
        outln!("why: {r}")?;
    }
    outln!("row: {}", serde_json::to_string_pretty(&c.row)?)?;
    for w in &d.warnings {
        outln!(
            "warning: {}{}: {}",
            w.warning,
            w.reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default(),
            w.detail
        )?;
    }
    if let Some(ch) = &d.chunk {
        match ch.quote {
            Some((s, e)) => outln!(
                "chunk {}:\n{}>>>{}<<<{}",
                ch.chunk_id,
                &ch.text[..s],
                &ch.text[s..e],
                &ch.text[e..]
            )?,
            None => outln!("chunk {}:\n{}", ch.chunk_id, ch.text)?,
        }
    }
    match &d.call {
        Some(m) => outln!(
            "model call {}: {} prompt {} schema {} v{} ({}), job {}, at {}",
            m.id,
            m.model,
            m.prompt_version,
            m.schema_id,
            m.schema_version,
            m.schema_sha256,
            m.job_id,
            m.started_at
        )?,
        None => outln!("model call: not on record")?,
    }
    for e in &d.evidence {
        outln!(
            "evidence {}: {} by {} {}{} at {}{}",
            e.seq,
            e.decision,
            e.actor_kind,
            e.actor,
            e.via.as_ref().map(|v| format!(" {v}")).unwrap_or_default(),
            e.decided_at,
            e.note
                .as_deref()
                .map(|n| format!(" — {n}"))
                .unwrap_or_default()
        )?;
    }
    Ok(0)
}

pub async fn evidence(config: &Config, cmd: EvidenceCommand) -> Result<u8> {
    let store = store(config).await?;
    match cmd {
        EvidenceCommand::Verify { expect_head, json } => {
            let report = store.evidence_verify_against(expect_head.as_ref()).await?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&report)?)?;
            } else if let Some(p) = &report.problem {
                eprintln!("evidence does not verify: {p}");
            } else {
                outln!(
                    "evidence verified: {} records; every candidate hash, promotion state, document revision, chunk and claim quote matches",
                    report.records
                )?;
                if let Some(kept) = &expect_head {
                    outln!(
                        "the log still holds the head kept earlier (record {})",
                        kept.seq
                    )?;
                }
                if let Some(head) = &report.head {
                    outln!("head: {head}")?;
                    outln!(
                        "(keep it outside the database: `relata evidence verify --expect-head {head}` later fails if the log up to it was rewritten)"
                    )?;
                }
            }
            Ok(if report.problem.is_some() {
                EXIT_REFUSED
            } else {
                0
            })
        }
        EvidenceCommand::History { id, limit, json } => {
            let records = store.evidence_history(id, limit).await?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&records)?)?;
                return Ok(0);
            }
            for e in &records {
                outln!(
                    "{:>6} {} {:<16} {:<8} {} {:?}{}{} prev {} sha256 {}",
                    e.seq,
                    e.decided_at.format("%Y-%m-%dT%H:%M:%S%.6fZ"),
                    e.candidate.to_string(),
                    e.decision,
                    e.actor_kind,
                    e.actor,
                    e.via.as_ref().map(|v| format!(" {v}")).unwrap_or_default(),
                    e.note
                        .as_deref()
                        .map(|n| format!(" note {n:?}"))
                        .unwrap_or_default(),
                    &e.prev_sha256[..12],
                    &e.sha256[..12],
                )?;
            }
            Ok(0)
        }
    }
}

/// `relata promote`: run the policy over every candidate without a decision now.
pub async fn promote(config: &Config, json: bool) -> Result<u8> {
    let policy = config.policy()?;
    let store = store(config).await?;
    let batch = i64::from(config.review.promote_batch);
    let mut total = relata_store::PromoteSummary::default();
    let mut cursor = relata_store::PromoteCursor::START;
    loop {
        let s = match store
            .promote_pending(&policy, relata_store::Sweep::batch(batch).after(cursor))
            .await
        {
            Ok(s) => s,
            Err(e) if e.kind() == ErrorKind::ChainBroken => {
                eprintln!("refused: {e}");
                return Ok(EXIT_REFUSED);
            }
            Err(e) => return Err(e.into()),
        };
        cursor = s.reached;
        let more = s.more;
        for (k, d, n) in s.decided {
            match total
                .decided
                .iter_mut()
                .find(|(kk, dd, _)| *kk == k && *dd == d)
            {
                Some((_, _, m)) => *m += n,
                None => total.decided.push((k, d, n)),
            }
        }
        if !more {
            break;
        }
    }
    total.decided.sort();
    if json {
        outln!("{}", serde_json::to_string(&total)?)?;
    } else if total.decided.is_empty() {
        outln!("no candidates without a decision")?;
    } else {
        for (k, d, n) in &total.decided {
            outln!("{k:<9} {d:<7} {n}")?;
        }
    }
    Ok(0)
}

/// `relata review token --by NAME`: a new sign-in token for the review page, printed once
/// on standard output (the notice goes to standard error, so the token can be piped).
async fn token(config: &Config, by: &str, revoke: bool) -> Result<u8> {
    let reviewer = config
        .reviewers()?
        .get(by)
        .map_err(|e| anyhow::anyhow!("--by: {e}"))?;
    let store = store(config).await?;
    if revoke {
        let had = store
            .revoke_review_token(reviewer.name())
            .await
            .context("revoking the token")?;
        eprintln!(
            "{}",
            if had {
                format!("{reviewer}'s token is revoked: their sessions end at their next request")
            } else {
                format!("{reviewer} held no token")
            }
        );
        return Ok(0);
    }
    let token = relata_review_web::auth::new_token();
    store
        .issue_review_token(reviewer.name(), &token)
        .await
        .context("storing the token's hash")?;
    eprintln!(
        "sign-in token for {reviewer} (shown once; any earlier token of {reviewer} no longer works):"
    );
    outln!("{token}")?;
    Ok(0)
}
