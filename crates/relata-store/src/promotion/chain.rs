//! The evidence log as a hash chain: each record's hash over its fields and its link to
//! the record before it, appending a batch of records under the lock of the chain's end,
//! and refusing to append to a log whose end is not what its head says.

use chrono::{DateTime, SubsecRound, Utc};
use relata_core::{ActorKind, CandidateId, EvidenceDecision};
use sha2::{Digest, Sha256};

use crate::copy_binary::CopyBinary;
use crate::error::{Result, StoreError};
use crate::parse_label;

/// The `prev_sha256` of the first record.
pub const GENESIS_SHA256: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// How a person's decision was made: what the reviewer's name on a record cannot say
/// alone, since `--by` is whatever the person at a shell typed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "via", rename_all = "snake_case")]
pub enum Via {
    /// The review page, by the signed-in reviewer (the session's name, never a form's).
    ReviewPage,
    /// `relata review approve|reject`, run as this operating-system user on this host.
    CommandLine { os_user: String, host: String },
}

impl Via {
    /// Every stored value of `evidence.via`.
    pub const LABELS: [&'static str; 2] = ["review_page", "command_line"];

    pub fn as_str(&self) -> &'static str {
        match self {
            Via::ReviewPage => Via::LABELS[0],
            Via::CommandLine { .. } => Via::LABELS[1],
        }
    }

    fn os_user(&self) -> Option<&str> {
        match self {
            Via::ReviewPage => None,
            Via::CommandLine { os_user, .. } => Some(os_user),
        }
    }

    fn host(&self) -> Option<&str> {
        match self {
            Via::ReviewPage => None,
            Via::CommandLine { host, .. } => Some(host),
        }
    }

    /// From the record's three columns (the schema's checks keep them consistent).
    fn from_columns(
        via: Option<String>,
        os_user: Option<String>,
        host: Option<String>,
    ) -> Result<Option<Via>> {
        match (via.as_deref(), os_user, host) {
            (None, None, None) => Ok(None),
            (Some("review_page"), None, None) => Ok(Some(Via::ReviewPage)),
            (Some("command_line"), Some(os_user), Some(host)) => {
                Ok(Some(Via::CommandLine { os_user, host }))
            }
            (via, ..) => Err(StoreError::Invariant(format!(
                "stored value: evidence via {via:?} with an operating-system user and host that do not go with it"
            ))),
        }
    }
}

impl std::fmt::Display for Via {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Via::ReviewPage => f.write_str("on the review page"),
            Via::CommandLine { os_user, host } => {
                write!(f, "on the command line as {os_user}@{host}")
            }
        }
    }
}

/// One record of the evidence log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EvidenceRecord {
    pub seq: i64,
    pub candidate: CandidateId,
    /// sha256 of the candidate's canonical content when the decision was made.
    pub candidate_sha256: String,
    /// The model call that proposed the candidate; `None` when it is not on record.
    pub call_id: Option<i64>,
    /// The task version (fingerprint) of the job that proposed it.
    pub task_version: String,
    pub actor_kind: ActorKind,
    /// The policy rule's name or the reviewer's name.
    pub actor: String,
    pub decision: EvidenceDecision,
    pub reasons: Vec<String>,
    pub note: Option<String>,
    pub decided_at: DateTime<Utc>,
    pub prev_sha256: String,
    pub sha256: String,
    /// How a person's decision was made; `None` for the policy's records and for every
    /// record written before relata recorded it.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
}

impl EvidenceRecord {
    /// The record's own hash: sha256 over a JSON array of every field but `sha256`, in a
    /// fixed order, the time as RFC 3339 UTC with microseconds (what PostgreSQL keeps).
    /// A record with `via` has one element more, `[via, os_user, host]`; one without is
    /// hashed exactly as every record was before `via` existed, so an old log verifies
    /// unchanged (and the two shapes cannot produce the same bytes).
    pub fn compute_sha256(&self) -> String {
        self.sha256_at(&decided_at_text(self.decided_at))
    }

    /// [`EvidenceRecord::compute_sha256`] with `decided_at` already formatted (a batch's
    /// records share one time): the array is written straight into the hash, without a
    /// JSON tree in between — the same bytes `serde_json` writes for that tree.
    fn sha256_at(&self, decided_at: &str) -> String {
        crate::hex_digest(self.digest_at(decided_at))
    }

    /// [`EvidenceRecord::sha256_at`] as the 32 bytes the log stores.
    fn digest_at(&self, decided_at: &str) -> [u8; 32] {
        struct Hashing(Sha256);
        impl std::io::Write for Hashing {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.update(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut hashing = Hashing(Sha256::new());
        macro_rules! fields {
            ($($more:expr),*) => {
                (
                    self.seq,
                    self.candidate.kind.as_str(),
                    self.candidate.id,
                    &self.candidate_sha256,
                    self.call_id,
                    &self.task_version,
                    self.actor_kind.as_str(),
                    &self.actor,
                    self.decision.as_str(),
                    &self.reasons,
                    &self.note,
                    decided_at,
                    &self.prev_sha256,
                    $($more),*
                )
            };
        }
        // Serializing strings, integers and options into memory cannot fail.
        match &self.via {
            None => serde_json::to_writer(&mut hashing, &fields!()),
            Some(via) => serde_json::to_writer(
                &mut hashing,
                &fields!((via.as_str(), via.os_user(), via.host())),
            ),
        }
        .expect("a record serializes");
        hashing.0.finalize().into()
    }
}

/// The time as a record's hash covers it.
fn decided_at_text(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// What an append does when another one holds the chain's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Wait its turn: a reviewer, `relata promote`, a worker's hand-off.
    Block,
    /// Return at once, reporting the chain busy: a worker's sweep, which tries again on
    /// its next tick rather than queue behind another promoter.
    SkipIfBusy,
}

/// Where the chain ends.
#[derive(sqlx::FromRow)]
pub(super) struct Head {
    seq: i64,
    sha256: String,
}

/// What a decision contributes to its evidence record: every field but the ones the
/// chain fills in when it appends it (`seq`, `decided_at`, `prev_sha256`, `sha256`).
pub(super) struct NewRecord {
    pub candidate: CandidateId,
    /// sha256 (hex) of the candidate's canonical content as it was judged.
    pub candidate_sha256: String,
    pub call_id: Option<i64>,
    pub task_version: String,
    pub actor_kind: ActorKind,
    /// The policy rule's name or the reviewer's name.
    pub actor: String,
    pub decision: EvidenceDecision,
    pub reasons: Vec<String>,
    pub note: Option<String>,
    pub via: Option<Via>,
}

/// Appends evidence records to the chain inside one transaction.
pub(super) struct Chain {
    head: Head,
    pub(super) now: DateTime<Utc>,
    /// `now` as each record's hash covers it, formatted once.
    now_text: String,
    records: Vec<EvidenceRecord>,
    /// The chain's end as the log stores it (32 bytes) before the first record, then
    /// each record's own hash as bytes: what `write` sends, without decoding the hex
    /// back.
    digests: Vec<[u8; 32]>,
}

impl Chain {
    /// The `seq` the next [`Chain::append`] gives its record.
    pub(super) fn next_seq(&self) -> i64 {
        self.head.seq + 1
    }

    pub(super) fn new(head: Head) -> Result<Chain> {
        // PostgreSQL keeps microseconds; the hash must be over what is stored.
        let now = Utc::now().trunc_subsecs(6);
        let start = hash_bytes(&head.sha256)?;
        Ok(Chain {
            head,
            now,
            now_text: decided_at_text(now),
            records: Vec::new(),
            digests: vec![start],
        })
    }

    /// Append one record: the chain gives it its `seq`, time and link, and hashes it.
    /// Returns its `seq`.
    pub(super) fn append(&mut self, new: NewRecord) -> i64 {
        let NewRecord {
            candidate,
            candidate_sha256,
            call_id,
            task_version,
            actor_kind,
            actor,
            decision,
            reasons,
            note,
            via,
        } = new;
        let mut record = EvidenceRecord {
            seq: self.next_seq(),
            candidate,
            candidate_sha256,
            call_id,
            task_version,
            actor_kind,
            actor,
            decision,
            reasons,
            note,
            decided_at: self.now,
            prev_sha256: self.head.sha256.clone(),
            sha256: String::new(),
            via,
        };
        let digest = record.digest_at(&self.now_text);
        record.sha256 = crate::hex_digest(digest);
        self.digests.push(digest);
        self.head = Head {
            seq: record.seq,
            sha256: record.sha256.clone(),
        };
        self.records.push(record);
        self.head.seq
    }

    pub(super) async fn write(self, tx: &mut sqlx::PgConnection) -> Result<()> {
        if self.records.is_empty() {
            return Ok(());
        }
        let mut rows = CopyBinary::new(17, self.records.len() * 300);
        for (r, link) in self.records.iter().zip(self.digests.windows(2)) {
            rows.int(r.seq)
                .text(r.candidate.kind.as_str())
                .int(r.candidate.id)
                .bytea(&hash_bytes(&r.candidate_sha256)?)
                .opt_int(r.call_id)
                .text(&r.task_version)
                .text(r.actor_kind.as_str())
                .text(&r.actor)
                .text(r.decision.as_str())
                .array(&r.reasons)
                .opt_text(r.note.as_deref())
                .timestamptz(r.decided_at)
                .bytea(&link[0])
                .bytea(&link[1])
                .opt_text(r.via.as_ref().map(Via::as_str))
                .opt_text(r.via.as_ref().and_then(Via::os_user))
                .opt_text(r.via.as_ref().and_then(Via::host))
                .end_row()?;
        }
        let first = self.records[0].seq;
        rows.copy_into(
            &mut *tx,
            "COPY evidence (seq, candidate_kind, candidate_id, candidate_sha256, call_id,
                 task_version, actor_kind, actor, decision, reasons, note, decided_at,
                 prev_sha256, sha256, via, via_os_user, via_host) FROM STDIN (FORMAT binary)",
        )
        .await
        .map_err(|e| taken_seq(e, first))?;
        sqlx::query("UPDATE evidence_head SET seq = $1, sha256 = $2")
            .bind(self.head.seq)
            .bind(self.digests.last().map(<[u8; 32]>::as_slice))
            .execute(&mut *tx)
            .await?;
        Ok(())
    }
}

/// A hash as the log stores it (32 bytes); relata computes and shows it as hex.
fn hash_bytes(hex_sha256: &str) -> Result<[u8; 32]> {
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(hex_sha256, &mut bytes)
        .map_err(|_| StoreError::Invariant(format!("{hex_sha256:?} is not a sha256 in hex")))?;
    Ok(bytes)
}

/// A record's `seq` already taken when a batch is appended: a row written past the head
/// after [`check_tail`] looked (nothing stops a plain `INSERT` from waiting for the head's
/// lock). Said as what it is, not as the key conflict; any other error is passed on.
fn taken_seq(e: StoreError, first: i64) -> StoreError {
    let StoreError::Database(sqlx::Error::Database(db)) = &e else {
        return e;
    };
    if db.code().as_deref() != Some("23505") || db.constraint() != Some("evidence_pkey") {
        return e;
    }
    // PostgreSQL's detail reads `Key (seq)=(4) already exists.`
    let seq = db
        .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
        .and_then(|pg| pg.detail())
        .and_then(|d| d.split_once("=("))
        .and_then(|(_, rest)| rest.split_once(')'))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(first);
    StoreError::ChainBroken {
        seq,
        what: format!(
            "evidence record {seq} is already in the log, past the chain's head (record {}): it was written behind relata's back",
            first - 1
        ),
    }
}

/// Refuse to append to a chain whose end is not what its head says: the head's record
/// must be the log's last, and unaltered. A record written past the head (a plain
/// `INSERT` is all it takes; the triggers refuse only updates and deletes) would make
/// the next append collide with it on its `seq`, and one altered at the end would have
/// the next record vouch for the forgery by linking to it. One probe of the primary key
/// for at most two rows and one record's hash, per append transaction.
async fn check_tail(tx: &mut sqlx::PgConnection, head: &Head) -> Result<()> {
    let rows = sqlx::query_as::<_, EvidenceRow>(concat!(
        evidence_select!(),
        " WHERE seq >= $1 ORDER BY seq LIMIT 2"
    ))
    .bind(head.seq.max(1))
    .fetch_all(&mut *tx)
    .await?;
    let mut records = rows.into_iter().map(evidence_record);
    let broken = |seq: i64, what: String| Err(StoreError::ChainBroken { seq, what });
    if head.seq == 0 {
        if head.sha256 != GENESIS_SHA256 {
            return broken(
                0,
                "the chain's head says the log is empty, but its hash is not the chain's start: the head was altered".into(),
            );
        }
        if let Some(r) = records.next().transpose()? {
            return broken(
                r.seq,
                format!(
                    "evidence record {} is in the log, but the chain's head says the log is empty: it was written behind relata's back",
                    r.seq
                ),
            );
        }
        return Ok(());
    }
    match records.next().transpose()? {
        Some(r) if r.seq == head.seq => {
            if r.sha256 != head.sha256 {
                return broken(
                    r.seq,
                    format!(
                        "evidence record {}, the chain's head, does not have the hash the head holds: the record or the head was altered",
                        r.seq
                    ),
                );
            }
            if r.compute_sha256() != r.sha256 {
                return broken(
                    r.seq,
                    format!(
                        "evidence record {}, the chain's head, does not match its own sha256: it was altered",
                        r.seq
                    ),
                );
            }
        }
        _ => {
            return broken(
                head.seq,
                format!(
                    "evidence record {}, which the chain's head names, is not in the log",
                    head.seq
                ),
            );
        }
    }
    if let Some(r) = records.next().transpose()? {
        return broken(
            r.seq,
            format!(
                "evidence record {} is in the log, past the chain's head (record {}): it was written behind relata's back",
                r.seq, head.seq
            ),
        );
    }
    Ok(())
}

/// Begin an append: a transaction that holds the chain's end, checked to be where the
/// log ends ([`check_tail`]); no head when `wait` is [`Wait::SkipIfBusy`] and another
/// append holds it.
/// A log that fails the check is refused with the transaction rolled back at once: a
/// dropped transaction would keep the head's lock until its connection's return to the
/// pool flushed the rollback, and appends meanwhile would wait (or a sweep skip its turn).
pub(super) async fn begin_append(
    pool: &sqlx::PgPool,
    wait: Wait,
) -> Result<(sqlx::Transaction<'static, sqlx::Postgres>, Option<Head>)> {
    let mut tx = pool.begin().await?;
    let head = lock_head(&mut tx, wait).await?;
    if let Some(h) = &head
        && let Err(e) = check_tail(&mut tx, h).await
    {
        // The refusal is what matters; a failed rollback is the connection's end.
        let _ = tx.rollback().await;
        return Err(e);
    }
    Ok((tx, head))
}

const HEAD_SELECT_FOR_UPDATE: &str =
    "SELECT seq, encode(sha256, 'hex') AS sha256 FROM evidence_head FOR UPDATE";
const HEAD_SELECT_SKIP_LOCKED: &str =
    "SELECT seq, encode(sha256, 'hex') AS sha256 FROM evidence_head FOR UPDATE SKIP LOCKED";

async fn lock_head(tx: &mut sqlx::PgConnection, wait: Wait) -> Result<Option<Head>> {
    let query = if wait == Wait::Block {
        HEAD_SELECT_FOR_UPDATE
    } else {
        HEAD_SELECT_SKIP_LOCKED
    };
    Ok(sqlx::query_as::<_, Head>(query)
        .fetch_optional(&mut *tx)
        .await?)
}

/// An evidence record's columns as [`evidence_select!`] reads them.
#[derive(sqlx::FromRow)]
pub(super) struct EvidenceRow {
    seq: i64,
    candidate_kind: String,
    candidate_id: i64,
    candidate_sha256: String,
    call_id: Option<i64>,
    task_version: String,
    actor_kind: String,
    actor: String,
    decision: String,
    reasons: Vec<String>,
    note: Option<String>,
    decided_at: DateTime<Utc>,
    prev_sha256: String,
    sha256: String,
    via: Option<String>,
    via_os_user: Option<String>,
    via_host: Option<String>,
}

/// The record a row holds; a label the closed sets do not know is an error, not a guess.
pub(super) fn evidence_record(r: EvidenceRow) -> Result<EvidenceRecord> {
    Ok(EvidenceRecord {
        seq: r.seq,
        candidate: CandidateId {
            kind: parse_label(r.candidate_kind)?,
            id: r.candidate_id,
        },
        candidate_sha256: r.candidate_sha256,
        call_id: r.call_id,
        task_version: r.task_version,
        actor_kind: parse_label(r.actor_kind)?,
        actor: r.actor,
        decision: parse_label(r.decision)?,
        reasons: r.reasons,
        note: r.note,
        decided_at: r.decided_at,
        prev_sha256: r.prev_sha256,
        sha256: r.sha256,
        via: Via::from_columns(r.via, r.via_os_user, r.via_host)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use relata_core::RowKind;

    /// The hash as it was first written: through a `serde_json::Value` tree. Every
    /// record already in a log was hashed this way, so the streamed hash must match it.
    fn through_a_tree(r: &EvidenceRecord) -> String {
        let canonical = serde_json::json!([
            r.seq,
            r.candidate.kind.as_str(),
            r.candidate.id,
            r.candidate_sha256,
            r.call_id,
            r.task_version,
            r.actor_kind.as_str(),
            r.actor,
            r.decision.as_str(),
            r.reasons,
            r.note,
            r.decided_at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
            r.prev_sha256,
        ]);
        hex::encode(Sha256::digest(canonical.to_string().as_bytes()))
    }

    #[test]
    fn the_streamed_record_hash_is_the_hash_every_earlier_record_was_given() {
        let base = EvidenceRecord {
            seq: 1,
            candidate: CandidateId {
                kind: RowKind::Claim,
                id: 42,
            },
            candidate_sha256: "ab".repeat(32),
            call_id: Some(7),
            task_version: "extract-v1".into(),
            actor_kind: ActorKind::Policy,
            actor: "claims-without-warnings".into(),
            decision: EvidenceDecision::Allow,
            reasons: Vec::new(),
            note: None,
            decided_at: Utc.with_ymd_and_hms(2026, 12, 3, 15, 4, 5).unwrap()
                + chrono::Duration::microseconds(123_456),
            prev_sha256: GENESIS_SHA256.into(),
            sha256: String::new(),
            via: None,
        };
        let awkward =
            "Ada \"Countess\" Lovelace\\ \u{0}\u{1f}\t\n\r\u{8}\u{c}\u{7f} é 漢 🦀 </script>";
        let variants = [
            base.clone(),
            EvidenceRecord {
                seq: i64::MAX,
                candidate: CandidateId {
                    kind: RowKind::Relation,
                    id: i64::MIN,
                },
                call_id: None,
                actor_kind: ActorKind::Reviewer,
                actor: awkward.into(),
                decision: EvidenceDecision::Reject,
                reasons: vec![awkward.into(), String::new(), "warning: demoted".into()],
                note: Some(awkward.into()),
                task_version: awkward.into(),
                ..base.clone()
            },
            EvidenceRecord {
                note: Some(String::new()),
                decided_at: Utc.with_ymd_and_hms(1999, 1, 1, 0, 0, 0).unwrap(),
                ..base.clone()
            },
        ];
        for r in &variants {
            assert_eq!(r.compute_sha256(), through_a_tree(r), "{r:?}");
        }
        // And the hash covers what it should: one changed field, another hash.
        let mut edited = base.clone();
        edited.reasons.push("x".into());
        assert_ne!(edited.compute_sha256(), base.compute_sha256());
    }

    /// A person's record says how the decision was made, inside its hash: one element
    /// more, `[via, os_user, host]`, after the thirteen every record has. A record
    /// without it keeps the old shape (the test above), so the two cannot collide.
    #[test]
    fn how_a_decision_was_made_is_covered_by_its_records_hash() {
        let base = EvidenceRecord {
            seq: 3,
            candidate: CandidateId {
                kind: RowKind::Claim,
                id: 42,
            },
            candidate_sha256: "ab".repeat(32),
            call_id: Some(7),
            task_version: "extract-v1".into(),
            actor_kind: ActorKind::Reviewer,
            actor: "Ada Lovelace".into(),
            decision: EvidenceDecision::Approve,
            reasons: Vec::new(),
            note: Some("checked".into()),
            decided_at: Utc.with_ymd_and_hms(2026, 12, 27, 9, 0, 0).unwrap(),
            prev_sha256: "cd".repeat(32),
            sha256: String::new(),
            via: Some(Via::CommandLine {
                os_user: "ada".into(),
                host: "analytical-engine".into(),
            }),
        };
        // The thirteen fields, as the tree above writes them, and then how.
        let r = &base;
        let mut expected = serde_json::json!([
            r.seq,
            r.candidate.kind.as_str(),
            r.candidate.id,
            r.candidate_sha256,
            r.call_id,
            r.task_version,
            r.actor_kind.as_str(),
            r.actor,
            r.decision.as_str(),
            r.reasons,
            r.note,
            r.decided_at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
            r.prev_sha256,
        ]);
        expected.as_array_mut().unwrap().push(serde_json::json!([
            "command_line",
            "ada",
            "analytical-engine"
        ]));
        assert_eq!(
            base.compute_sha256(),
            hex::encode(Sha256::digest(expected.to_string().as_bytes()))
        );
        let hashes: Vec<String> = [
            None,
            Some(Via::ReviewPage),
            Some(Via::CommandLine {
                os_user: "ada".into(),
                host: "elsewhere".into(),
            }),
            Some(Via::CommandLine {
                os_user: "mallory".into(),
                host: "analytical-engine".into(),
            }),
            base.via.clone(),
        ]
        .into_iter()
        .map(|via| {
            EvidenceRecord {
                via,
                ..base.clone()
            }
            .compute_sha256()
        })
        .collect();
        let distinct: std::collections::BTreeSet<&String> = hashes.iter().collect();
        assert_eq!(distinct.len(), hashes.len(), "{hashes:?}");
    }
}
