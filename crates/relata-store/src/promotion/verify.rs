//! `relata evidence verify`: recompute the chain, every candidate's hash and the review
//! queue against the log, then every source the candidates were drawn from.

use futures::TryStreamExt;
use relata_core::{CandidateId, EvidenceDecision, PromotionState, RowKind};

use super::chain::{EvidenceRecord, EvidenceRow, GENESIS_SHA256, evidence_record};
use crate::error::Result;
use crate::{Store, parse_label};
/// What [`Store::evidence_verify`] found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VerifyReport {
    /// Records checked.
    pub records: i64,
    /// The first problem, if any; `None` means the chain, every candidate hash, every
    /// promotion state and every source (revision, chunk, claim quote) match.
    pub problem: Option<VerifyProblem>,
    /// The chain's last record, when everything verified: what an operator keeps
    /// elsewhere to hold the log to later ([`Store::evidence_verify_against`]).
    pub head: Option<ChainHead>,
}

/// A position in the evidence chain: a record's `seq` and its sha256, written
/// `SEQ:SHA256` (`0:000…0` before the first record). Kept outside the database, it
/// catches a rewrite of any record up to it: the chain is unkeyed sha256, so a database
/// user can recompute every hash after an edit, but not make record `SEQ` keep its hash.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct ChainHead {
    pub seq: i64,
    /// Lower-case hex.
    pub sha256: String,
}

impl std::fmt::Display for ChainHead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.seq, self.sha256)
    }
}

/// A `SEQ:SHA256` that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a chain head: expected SEQ:SHA256, a record number and 64 hex digits (what `relata evidence verify` prints)"
)]
pub struct ParseChainHeadError(String);

impl std::str::FromStr for ChainHead {
    type Err = ParseChainHeadError;

    fn from_str(s: &str) -> std::result::Result<ChainHead, ParseChainHeadError> {
        let bad = || ParseChainHeadError(relata_core::text::cut(s, 200).to_owned());
        let (seq, sha256) = s.trim().split_once(':').ok_or_else(bad)?;
        let seq: i64 = seq.parse().map_err(|_| bad())?;
        if seq < 0 || sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        Ok(ChainHead {
            seq,
            sha256: sha256.to_ascii_lowercase(),
        })
    }
}

/// The first place where the log and the store disagree.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VerifyProblem {
    /// The record at fault (or where the chain breaks), if one can be named.
    pub seq: Option<i64>,
    pub candidate: Option<CandidateId>,
    /// The document revision at fault when the problem is in a source: the document
    /// changed under what was drawn from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<i64>,
    pub what: String,
}

impl VerifyProblem {
    fn at_record(seq: i64, candidate: Option<CandidateId>, what: String) -> VerifyProblem {
        VerifyProblem {
            seq: Some(seq),
            candidate,
            document_id: None,
            revision_id: None,
            chunk_id: None,
            what,
        }
    }

    fn in_source(
        (document_id, revision_id): (i64, i64),
        chunk_id: Option<i64>,
        candidate: Option<CandidateId>,
        what: String,
    ) -> VerifyProblem {
        VerifyProblem {
            seq: None,
            candidate,
            document_id: Some(document_id),
            revision_id: Some(revision_id),
            chunk_id,
            what,
        }
    }
}

impl std::fmt::Display for VerifyProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(seq) = self.seq {
            write!(f, "evidence record {seq}")?;
            if let Some(c) = self.candidate {
                write!(f, " ({c})")?;
            }
            write!(f, ": ")?;
        } else {
            let mut at = Vec::new();
            if let (Some(d), Some(r)) = (self.document_id, self.revision_id) {
                at.push(format!("document {d} revision {r}"));
            }
            if let Some(c) = self.chunk_id {
                at.push(format!("chunk {c}"));
            }
            if let Some(c) = self.candidate {
                at.push(c.to_string());
            }
            if !at.is_empty() {
                write!(f, "{}: ", at.join(", "))?;
            }
        }
        f.write_str(&self.what)
    }
}

impl Store {
    /// Recompute the chain (every record's hash and link), every candidate's hash and
    /// every promotion state against its record, then check every source against its
    /// hashes and offsets (`sources_problem`); stop at the first disagreement.
    pub async fn evidence_verify(&self) -> Result<VerifyReport> {
        self.evidence_verify_against(None).await
    }

    /// [`Store::evidence_verify`], and hold the log to a head kept earlier: the record at
    /// `expect.seq` must still be in the log with that sha256. A chain that verifies on
    /// its own may still have been rewritten (every hash recomputed after an edit); only
    /// a hash kept outside the database tells.
    pub async fn evidence_verify_against(
        &self,
        expect: Option<&ChainHead>,
    ) -> Result<VerifyReport> {
        // One snapshot for the whole check: appends racing with it are not mistaken for
        // breaks.
        let mut tx = self.pool.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .execute(&mut *tx)
            .await?;
        let start = ChainHead {
            seq: 0,
            sha256: GENESIS_SHA256.to_owned(),
        };
        let (records, end, mut problem) = match expect
            .filter(|k| k.seq == 0 && k.sha256 != GENESIS_SHA256)
        {
            Some(kept) => (
                0,
                start,
                Some(VerifyProblem::at_record(
                    0,
                    None,
                    format!(
                        "the head kept earlier ({kept}) names the chain's start with a hash that is not the start's: it was not printed by `relata evidence verify`"
                    ),
                )),
            ),
            None => chain_problem(&mut tx, start, expect).await?,
        };
        if problem.is_none() {
            problem = head_problem(&mut tx, &end, expect).await?;
        }
        if problem.is_none() {
            problem = promotion_problem(&mut tx).await?;
        }
        if problem.is_none() {
            problem = sources_problem(&mut tx).await?;
        }
        tx.commit().await?;
        let head = problem.is_none().then_some(end);
        Ok(VerifyReport {
            records,
            problem,
            head,
        })
    }
}

/// A record with its candidate's canonical hash as the row stands now.
#[derive(sqlx::FromRow)]
struct CheckedRow {
    #[sqlx(flatten)]
    record: EvidenceRow,
    /// Null when the candidate is gone.
    now_sha256: Option<String>,
}

/// Walk the log in order from `start`, checking each record's `seq`, link and hash, the
/// head kept earlier, and its candidate's hash now. Returns the records read, the last
/// record that verified and the first problem.
async fn chain_problem(
    tx: &mut sqlx::PgConnection,
    start: ChainHead,
    expect: Option<&ChainHead>,
) -> Result<(i64, ChainHead, Option<VerifyProblem>)> {
    let mut records = 0i64;
    let mut end = start;
    let mut rows = sqlx::query_as::<_, CheckedRow>(concat!(
        "SELECT t.*, relata_candidate_sha256(t.candidate_kind, t.candidate_id) AS now_sha256 FROM (",
        evidence_select!(),
        ") t ORDER BY seq"
    ))
    .fetch(&mut *tx);
    while let Some(r) = rows.try_next().await? {
        let now_sha = r.now_sha256;
        let rec = evidence_record(r.record)?;
        records += 1;
        if let Some(what) = record_problem(&rec, &end, now_sha.as_deref(), expect) {
            let problem = VerifyProblem::at_record(rec.seq, Some(rec.candidate), what);
            return Ok((records, end, Some(problem)));
        }
        end = ChainHead {
            seq: rec.seq,
            sha256: rec.sha256,
        };
    }
    Ok((records, end, None))
}

/// What is wrong with the record after `before`, if anything.
fn record_problem(
    rec: &EvidenceRecord,
    before: &ChainHead,
    now_sha: Option<&str>,
    expect: Option<&ChainHead>,
) -> Option<String> {
    if rec.seq != before.seq + 1 {
        Some(format!(
            "the log skips from record {} to {}: records were deleted",
            before.seq, rec.seq
        ))
    } else if rec.prev_sha256 != before.sha256 {
        Some(
            "does not link to the record before it (prev_sha256 differs): the record before it was altered or removed"
                .into(),
        )
    } else if rec.compute_sha256() != rec.sha256 {
        Some("its content does not match its sha256: the record was altered".into())
    } else if let Some(kept) = expect.filter(|k| k.seq == rec.seq && k.sha256 != rec.sha256) {
        Some(format!(
            "its sha256 is {}, not {} as in the head kept earlier: the log up to this record was rewritten (records edited and every hash after them recomputed)",
            rec.sha256, kept.sha256
        ))
    } else if now_sha.is_none() {
        Some("its candidate no longer exists".into())
    } else if now_sha != Some(rec.candidate_sha256.as_str()) {
        Some(
            "its candidate's content no longer matches the hash recorded when it was decided: the row was edited"
                .into(),
        )
    } else {
        None
    }
}

/// The chain's head against where the log ends (`end`), then the head kept earlier
/// against it.
async fn head_problem(
    tx: &mut sqlx::PgConnection,
    end: &ChainHead,
    expect: Option<&ChainHead>,
) -> Result<Option<VerifyProblem>> {
    let last = end.seq;
    let head = sqlx::query_as::<_, ChainHead>(
        "SELECT seq, encode(sha256, 'hex') AS sha256 FROM evidence_head",
    )
    .fetch_optional(&mut *tx)
    .await?
    .unwrap_or(ChainHead {
        seq: -1,
        sha256: String::new(),
    });
    if head != *end {
        let head_seq = head.seq;
        return Ok(Some(VerifyProblem::at_record(
            head_seq,
            None,
            format!(
                "the chain's head names record {head_seq}, but the log ends at record {last}: records at the end were deleted or the head was altered"
            ),
        )));
    }
    Ok(expect.filter(|k| k.seq > last).map(|kept| {
        VerifyProblem::at_record(
            kept.seq,
            None,
            format!(
                "the head kept earlier ({kept}) names record {}, but the log ends at record {last}: records were removed and the log rewritten, or the head was kept from another database",
                kept.seq
            ),
        )
    }))
}

/// A record that held its candidate for a person.
#[derive(sqlx::FromRow)]
struct UnqueuedRow {
    seq: i64,
    candidate_kind: String,
    candidate_id: i64,
}

/// A review queue row with the record it names (null-extended when there is none) and
/// what the log says about its candidate.
#[derive(sqlx::FromRow)]
struct QueueRow {
    candidate_kind: String,
    candidate_id: i64,
    state: String,
    evidence_seq: i64,
    decision: Option<String>,
    record_kind: Option<String>,
    record_id: Option<i64>,
    latest_seq: Option<i64>,
    policy_decision: Option<String>,
}

/// A review queue that its evidence records do not support: a row set to `promoted` with
/// plain SQL, say, one added for a candidate the policy did not hold for a person, or a
/// held candidate's row deleted. (A candidate's state is its latest record, so no row can
/// promote anything; but the queue is what people work from.)
async fn promotion_problem(tx: &mut sqlx::PgConnection) -> Result<Option<VerifyProblem>> {
    let unqueued = sqlx::query_as::<_, UnqueuedRow>(
        "SELECT e.seq, e.candidate_kind, e.candidate_id FROM evidence e
         WHERE e.decision = 'review'
           AND NOT EXISTS (SELECT 1 FROM promotions p
                           WHERE p.candidate_kind = e.candidate_kind
                             AND p.candidate_id = e.candidate_id)
         ORDER BY e.seq LIMIT 1",
    )
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(r) = unqueued {
        return Ok(Some(VerifyProblem::at_record(
            r.seq,
            Some(CandidateId {
                kind: parse_label(r.candidate_kind)?,
                id: r.candidate_id,
            }),
            "the policy held it for review, but the review queue has no row for it: the row was deleted"
                .into(),
        )));
    }
    let mut rows = sqlx::query_as::<_, QueueRow>(
        "SELECT p.candidate_kind, p.candidate_id, p.state, p.evidence_seq, e.decision,
                e.candidate_kind AS record_kind, e.candidate_id AS record_id,
                (SELECT max(x.seq) FROM evidence x
                 WHERE x.candidate_kind = p.candidate_kind AND x.candidate_id = p.candidate_id)
                    AS latest_seq,
                (SELECT x.decision FROM evidence x
                 WHERE x.candidate_kind = p.candidate_kind AND x.candidate_id = p.candidate_id
                   AND x.actor_kind = 'policy'
                 ORDER BY x.seq LIMIT 1) AS policy_decision
         FROM promotions p LEFT JOIN evidence e ON e.seq = p.evidence_seq
         ORDER BY p.evidence_seq",
    )
    .fetch(&mut *tx);
    while let Some(r) = rows.try_next().await? {
        let id = CandidateId {
            kind: parse_label(r.candidate_kind)?,
            id: r.candidate_id,
        };
        let state: PromotionState = parse_label(r.state)?;
        let seq = r.evidence_seq;
        let (ekind, eid, latest, policy) =
            (r.record_kind, r.record_id, r.latest_seq, r.policy_decision);
        let problem = |what: String| Ok(Some(VerifyProblem::at_record(seq, Some(id), what)));
        if ekind.as_deref() != Some(id.kind.as_str()) || eid != Some(id.id) {
            return problem(
                "its promotion state points at a record about another candidate".into(),
            );
        }
        if latest != Some(seq) {
            return problem("its promotion state ignores a later decision".into());
        }
        if policy.as_deref() != Some(EvidenceDecision::Review.as_str()) {
            return problem(format!(
                "it is in the review queue, but the policy's decision was {}: the row was added behind relata's back",
                policy.as_deref().unwrap_or("none")
            ));
        }
        let decision: EvidenceDecision = parse_label(r.decision.unwrap_or_default())?;
        let implied = PromotionState::after(decision);
        if implied != state {
            return problem(format!(
                "its promotion state is {state} but its last decision ({decision}) makes it {implied}: the state was edited"
            ));
        }
    }
    Ok(None)
}

/// Every document revision against its stored sha256, every chunk against the
/// revision's bytes at its offsets, and every claim's quote against the bytes at its
/// offsets: the first that differs, in revision order (a revision, then its chunks),
/// then in claim order. A record's hash covers its candidate's row, not the document
/// it quotes, so without this a document edited with plain SQL (the triggers guard
/// claims, not revisions) would go on vouching for a quote it no longer holds.
///
/// Revisions are streamed one at a time, each with its chunks' offsets and hashes read
/// by the `(revision_id, ordinal)` index and whether each chunk's text still hashes to
/// its sha256 (hashed by the server, so chunk texts are not sent): the check holds one
/// revision's text at a time and hashes each of its bytes once, where comparing in SQL
/// would copy the whole revision for every chunk. Claims are then read in id order
/// with their chunk (its primary key), and each quote compared with the chunk's text
/// at the quote's offsets, which the first pass has tied to the revision's bytes.
async fn sources_problem(tx: &mut sqlx::PgConnection) -> Result<Option<VerifyProblem>> {
    if let Some(problem) = revisions_problem(tx).await? {
        return Ok(Some(problem));
    }
    if let Some(p) = quotes_problem(tx).await? {
        return Ok(Some(p));
    }
    join_evidence_problem(tx).await
}

/// A revision's columns with its chunks' as arrays in order (null when it has none).
#[derive(sqlx::FromRow)]
struct RevisionRow {
    id: i64,
    document_id: i64,
    sha256: String,
    text: String,
    ids: Option<Vec<i64>>,
    starts: Option<Vec<i32>>,
    ends: Option<Vec<i32>>,
    shas: Option<Vec<String>>,
    texts_ok: Option<Vec<bool>>,
}

/// Every revision against its sha256, then each of its chunks against the revision's
/// bytes at its offsets: the first that differs.
async fn revisions_problem(tx: &mut sqlx::PgConnection) -> Result<Option<VerifyProblem>> {
    {
        let mut revisions = sqlx::query_as::<_, RevisionRow>(
            "SELECT r.id, r.document_id, r.sha256, r.text, c.ids, c.starts, c.ends, c.shas,
                    c.texts_ok
             FROM document_revisions r
             CROSS JOIN LATERAL (
                 SELECT array_agg(x.id ORDER BY x.ordinal) AS ids,
                        array_agg(x.start_byte ORDER BY x.ordinal) AS starts,
                        array_agg(x.end_byte ORDER BY x.ordinal) AS ends,
                        array_agg(x.sha256 ORDER BY x.ordinal) AS shas,
                        array_agg(encode(sha256(convert_to(x.text, 'UTF8')), 'hex') = x.sha256
                                  ORDER BY x.ordinal) AS texts_ok
                 FROM chunks x WHERE x.revision_id = r.id
             ) c
             ORDER BY r.id",
        )
        .fetch(&mut *tx);
        while let Some(r) = revisions.try_next().await? {
            let revision: (i64, i64) = (r.document_id, r.id);
            let stored = r.sha256;
            let text = r.text;
            if crate::sha256_hex(text.as_bytes()) != stored {
                return Ok(Some(VerifyProblem::in_source(
                    revision,
                    None,
                    None,
                    "its text no longer hashes to its stored sha256: the text or the hash was edited"
                        .into(),
                )));
            }
            let ids = r.ids.unwrap_or_default();
            let starts = r.starts.unwrap_or_default();
            let ends = r.ends.unwrap_or_default();
            let shas = r.shas.unwrap_or_default();
            let texts_ok = r.texts_ok.unwrap_or_default();
            let bytes = text.as_bytes();
            for ((((&id, &start), &end), sha), &text_ok) in
                ids.iter().zip(&starts).zip(&ends).zip(&shas).zip(&texts_ok)
            {
                let chunk = |what: String| {
                    Ok(Some(VerifyProblem::in_source(
                        revision,
                        Some(id),
                        None,
                        what,
                    )))
                };
                if !text_ok {
                    return chunk(
                        "its text no longer hashes to its stored sha256: the chunk was edited"
                            .into(),
                    );
                }
                let span = usize::try_from(start)
                    .ok()
                    .zip(usize::try_from(end).ok())
                    .and_then(|(s, e)| bytes.get(s..e));
                let Some(span) = span else {
                    return chunk(format!(
                        "its offsets [{start}, {end}) lie outside the revision's {} bytes: the revision or the chunk was edited",
                        bytes.len()
                    ));
                };
                if crate::sha256_hex(span) != *sha {
                    return chunk(format!(
                        "the revision's bytes at [{start}, {end}) are not the chunk's text: the revision or the chunk was edited"
                    ));
                }
            }
        }
    }
    Ok(None)
}

/// A claim's quote with the revision's bytes at its offsets (null when the revision is
/// gone).
#[derive(sqlx::FromRow)]
struct QuoteRow {
    id: i64,
    document_id: i64,
    revision_id: i64,
    quote_start: i32,
    quote_end: i32,
    quote: String,
    now: Option<Vec<u8>>,
}

/// The first claim, in id order, whose quote is not its source's text at its offsets.
async fn quotes_problem(tx: &mut sqlx::PgConnection) -> Result<Option<VerifyProblem>> {
    // A quote inside its chunk (every quote the gate accepts) is compared with the
    // chunk's text; one outside it, with the revision's.
    let claim = sqlx::query_as::<_, QuoteRow>(
        "SELECT q.id, q.document_id, q.revision_id, q.quote_start, q.quote_end, q.quote,
                (SELECT substring(convert_to(r.text, 'UTF8')
                                  FROM q.quote_start + 1 FOR q.quote_end - q.quote_start)
                 FROM document_revisions r WHERE r.id = q.revision_id) AS now
         FROM claims q JOIN chunks ch ON ch.id = q.chunk_id
         WHERE (CASE WHEN q.quote_start >= ch.start_byte AND q.quote_end <= ch.end_byte
                     THEN substring(convert_to(ch.text, 'UTF8')
                                    FROM q.quote_start - ch.start_byte + 1
                                    FOR q.quote_end - q.quote_start)
                     ELSE (SELECT substring(convert_to(r.text, 'UTF8')
                                            FROM q.quote_start + 1
                                            FOR q.quote_end - q.quote_start)
                           FROM document_revisions r WHERE r.id = q.revision_id)
                END) IS DISTINCT FROM convert_to(q.quote, 'UTF8')
         ORDER BY q.id LIMIT 1",
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(r) = claim else {
        return Ok(None);
    };
    let id = CandidateId {
        kind: RowKind::Claim,
        id: r.id,
    };
    let (start, end) = (r.quote_start, r.quote_end);
    let quote = r.quote;
    let now = r.now.map_or_else(
        || "nothing (the revision is gone)".to_owned(),
        |b| {
            format!(
                "{:?}",
                relata_core::text::cut(&String::from_utf8_lossy(&b), 200)
            )
        },
    );
    Ok(Some(VerifyProblem::in_source(
        (r.document_id, r.revision_id),
        None,
        Some(id),
        format!(
            "its quote {:?} is not the revision's text at bytes [{start}, {end}), which reads {now}: the document was edited after the claim was stored",
            relata_core::text::cut(&quote, 200)
        ),
    )))
}

/// The first join proposal, in id order, whose evidence is not its revision's text at its
/// offsets: the document was edited after the model cited it.
async fn join_evidence_problem(tx: &mut sqlx::PgConnection) -> Result<Option<VerifyProblem>> {
    let row = sqlx::query_as::<_, QuoteRow>(
        "SELECT p.id, r.document_id, p.evidence_revision_id AS revision_id,
                p.evidence_start AS quote_start, p.evidence_end AS quote_end,
                p.evidence_quote AS quote,
                substring(convert_to(r.text, 'UTF8')
                          FROM p.evidence_start + 1 FOR p.evidence_end - p.evidence_start) AS now
         FROM entity_join_proposals p
         JOIN document_revisions r ON r.id = p.evidence_revision_id
         WHERE substring(convert_to(r.text, 'UTF8')
                         FROM p.evidence_start + 1 FOR p.evidence_end - p.evidence_start)
               IS DISTINCT FROM convert_to(p.evidence_quote, 'UTF8')
         ORDER BY p.id LIMIT 1",
    )
    .fetch_optional(&mut *tx)
    .await?;
    Ok(row.map(|r| {
        VerifyProblem::in_source(
            (r.document_id, r.revision_id),
            None,
            Some(CandidateId {
                kind: RowKind::Join,
                id: r.id,
            }),
            format!(
                "its evidence {:?} is not the revision's text at bytes [{}, {}): the document was edited after the model cited it",
                relata_core::text::cut(&r.quote, 200),
                r.quote_start,
                r.quote_end
            ),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_head_is_read_as_verify_prints_it() {
        let head = ChainHead {
            seq: 42,
            sha256: "ab".repeat(32),
        };
        assert_eq!(head.to_string().parse::<ChainHead>(), Ok(head.clone()));
        assert_eq!(
            format!(" 42:{} ", "AB".repeat(32)).parse::<ChainHead>(),
            Ok(head)
        );
        assert_eq!(
            format!("0:{GENESIS_SHA256}")
                .parse::<ChainHead>()
                .unwrap()
                .seq,
            0
        );
        for bad in [
            "",
            "42",
            "42:",
            &format!("-1:{}", "ab".repeat(32)),
            &format!("x:{}", "ab".repeat(32)),
            &format!("42:{}", "ab".repeat(31)),
            &format!("42:{}g", "ab".repeat(31) + "a"),
            &format!("42 {}", "ab".repeat(32)),
        ] {
            let e = bad.parse::<ChainHead>().unwrap_err();
            assert!(e.to_string().contains("SEQ:SHA256"), "{bad:?}: {e}");
        }
    }
}
