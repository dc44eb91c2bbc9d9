//! Answers: retrieval of passages for a question, the stored claims and contradictions
//! that go with them, and the record of each answer.
//!
//! Retrieval is deterministic and needs nothing but PostgreSQL: full-text search over the
//! chunks of current revisions (`chunks.text_search`, a generated `tsvector` with a GIN
//! index), ranked by `ts_rank`, ties broken by chunk id. The question's words are OR-ed,
//! not AND-ed: a question rarely repeats every word of the passage that answers it, and
//! the rank already prefers passages holding more of them. [`Retriever`] is the seam for
//! another way of finding passages (an embedding index): whatever finds them, a passage is
//! a span of a stored revision, so a citation always resolves to the document's own bytes.

use relata_core::SourceHandle;
use sqlx::Row;

use crate::{Result, Store, StoreError, to_i32, to_usize};

/// Sources returned when the caller does not say.
pub const DEFAULT_K: usize = 8;
/// Most sources one question may retrieve.
pub const MAX_K: usize = 20;
/// Longest passage, in bytes: a longer chunk is narrowed to the consecutive sentences
/// that hold most of the question's words, up to this bound.
pub const PASSAGE_MAX_BYTES: usize = 1_500;

/// A retrieved passage: a span of a stored revision's text.
#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    pub document_id: i64,
    pub revision_id: i64,
    pub chunk_id: i64,
    pub title: Option<String>,
    /// The revision's own text at `start..end`.
    pub text: String,
    /// Byte offsets (UTF-8) into the revision text.
    pub start: usize,
    pub end: usize,
    pub rank: f32,
}

/// A stored claim whose quote lies inside a passage.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AttachedClaim {
    pub claim_id: i64,
    pub statement: String,
    pub quote: String,
    /// Byte offsets (UTF-8) into the revision text, like the passage's.
    pub quote_start: usize,
    pub quote_end: usize,
}

impl AttachedClaim {
    /// True when the claim's quote is still the passage's bytes at its offsets. A source
    /// edited behind relata's back (plain SQL on a revision) breaks it; such a claim must
    /// not be served beside bytes that no longer say what its quote says.
    pub fn quote_holds_in(&self, passage: &Passage) -> bool {
        let (Some(from), Some(to)) = (
            self.quote_start.checked_sub(passage.start),
            self.quote_end.checked_sub(passage.start),
        ) else {
            return false;
        };
        passage.text.get(from..to) == Some(self.quote.as_str())
    }
}

/// A stored `contradicts` relation between two claims whose quotes lie in passages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contradiction {
    pub claim_a: i64,
    pub claim_b: i64,
    /// Index (in the passages given) of the first passage holding each claim's quote.
    pub passage_a: usize,
    pub passage_b: usize,
    /// The relation, or either of its claims, is not promoted yet: it waits for a person
    /// (or for the policy). Surfaced all the same, marked: a warning waiting for review
    /// must never be hidden from the person asking.
    pub pending_review: bool,
}

/// Finds passages for a question. The store's full-text search is the one relata ships;
/// an embedding index would be another implementation, returning spans of stored
/// revisions just the same.
pub trait Retriever {
    fn retrieve(
        &self,
        question: &str,
        k: usize,
    ) -> impl std::future::Future<Output = Result<Vec<Passage>>> + Send;
}

impl Retriever for Store {
    fn retrieve(
        &self,
        question: &str,
        k: usize,
    ) -> impl std::future::Future<Output = Result<Vec<Passage>>> + Send {
        self.retrieve_passages(question, k)
    }
}

/// One answer as recorded.
#[derive(Debug, Clone)]
pub struct NewAnswer<'a> {
    pub question: &'a str,
    pub k: usize,
    pub status: relata_core::AnswerStatus,
    pub answer: Option<&'a str>,
    pub citations: &'a [SourceHandle],
    /// In handle order.
    pub sources: &'a [(Passage, Vec<AttachedClaim>)],
    pub reasons: &'a [relata_core::Reason],
    /// `[{reason, detail}]`, as returned.
    pub caveats: serde_json::Value,
    /// `None` when the model was not asked (no source).
    pub call: Option<AnswerCall<'a>>,
}

/// The model call behind an answer: the provenance recorded for every task's calls.
#[derive(Debug, Clone)]
pub struct AnswerCall<'a> {
    pub model: &'a str,
    pub prompt_version: &'a str,
    pub schema_id: &'a str,
    pub schema_version: u32,
    pub schema_sha256: &'a str,
    pub sent_schema_sha256: Option<&'a str>,
    pub started_at: chrono::DateTime<chrono::Utc>,
    pub finished_at: chrono::DateTime<chrono::Utc>,
    pub duration_ms: u64,
    pub attempts: u32,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub excerpt: Option<&'a str>,
}

/// Words of the question as the search will see them, lowercased, for choosing sentences
/// of a long chunk (the SQL side stems; this side only has to prefer the right sentences).
fn question_words(question: &str) -> Vec<String> {
    let mut out: Vec<String> = question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The span of `text` (a chunk) to use as a passage: all of it when it fits
/// [`PASSAGE_MAX_BYTES`], else the run of consecutive sentences, within the bound, that
/// holds the most distinct question words (the earliest such run on a tie).
fn narrow(text: &str, words: &[String]) -> (usize, usize) {
    if text.len() <= PASSAGE_MAX_BYTES {
        return (0, text.len());
    }
    let spans = relata_core::sentences::spans(text, 1, 1, PASSAGE_MAX_BYTES);
    if spans.is_empty() {
        // No sentence at all: the leading bytes, cut on a character boundary.
        let mut end = PASSAGE_MAX_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        return (0, end);
    }
    let lowered: Vec<String> = spans
        .iter()
        .map(|&(s, e)| text[s..e].to_lowercase())
        .collect();
    let mut best = (0usize, spans[0]);
    for i in 0..spans.len() {
        let start = spans[i].0;
        let mut end = spans[i].1;
        let mut j = i + 1;
        while j < spans.len() && spans[j].1 - start <= PASSAGE_MAX_BYTES {
            end = spans[j].1;
            j += 1;
        }
        let score = words
            .iter()
            .filter(|w| lowered[i..j].iter().any(|s| s.contains(w.as_str())))
            .count();
        if score > best.0 {
            best = (score, (start, end));
        }
    }
    best.1
}

/// The span of `text` (a chunk) to show for a claim whose quote is at `qs..qe` of it: all
/// of it when it fits [`PASSAGE_MAX_BYTES`], else the sentences holding the quote and as
/// many neighbours, after then before, as the bound leaves room for.
fn around(text: &str, qs: usize, qe: usize) -> (usize, usize) {
    if text.len() <= PASSAGE_MAX_BYTES {
        return (0, text.len());
    }
    let spans = relata_core::sentences::spans(text, 1, 1, text.len());
    let holding: Vec<usize> = (0..spans.len())
        .filter(|&i| spans[i].0 < qe && qs < spans[i].1)
        .collect();
    let (Some(&first), Some(&last)) = (holding.first(), holding.last()) else {
        return (qs, qe);
    };
    let (mut lo, mut hi) = (first, last);
    let fits = |lo: usize, hi: usize| spans[hi].1 - spans[lo].0 <= PASSAGE_MAX_BYTES;
    loop {
        if hi + 1 < spans.len() && fits(lo, hi + 1) {
            hi += 1;
        } else if lo > 0 && fits(lo - 1, hi) {
            lo -= 1;
        } else {
            break;
        }
    }
    (spans[lo].0.min(qs), spans[hi].1.max(qe))
}

/// The claims held in the passages bound as `$2..$5` ([`passage_arrays`]), each with the
/// first passage holding it (`held(claim_id, idx)`): those whose quote lies wholly inside
/// a passage, rejected and denied ones left out. One definition for every read that asks
/// which stored claims a set of passages shows.
macro_rules! held_claims {
    () => {
        "WITH p AS (
             SELECT * FROM unnest($2::int[], $3::bigint[], $4::int[], $5::int[])
                      AS p(idx, revision_id, start_byte, end_byte)),
         held AS (
             SELECT cl.id AS claim_id, min(p.idx) AS idx
               FROM p
               JOIN claims cl ON cl.revision_id = p.revision_id
                             AND cl.quote_start >= p.start_byte
                             AND cl.quote_end <= p.end_byte
              WHERE relata_candidate_state('claim', cl.id) NOT IN ('rejected', 'denied')
              GROUP BY cl.id) "
    };
}

/// Passages as the parallel arrays `unnest` takes: index, revision, start, end.
type PassageArrays = (Vec<i32>, Vec<i64>, Vec<i32>, Vec<i32>);

fn passage_arrays(passages: &[Passage]) -> Result<PassageArrays> {
    let idx = (0..passages.len())
        .map(|i| to_i32(i, "passage index"))
        .collect::<Result<_>>()?;
    let revs = passages.iter().map(|p| p.revision_id).collect();
    let starts = passages
        .iter()
        .map(|p| to_i32(p.start, "passage start"))
        .collect::<Result<_>>()?;
    let ends = passages
        .iter()
        .map(|p| to_i32(p.end, "passage end"))
        .collect::<Result<_>>()?;
    Ok((idx, revs, starts, ends))
}

impl Store {
    /// The top `k` (1..=[`MAX_K`]) passages for `question` among the chunks of current
    /// revisions, by full-text rank, ties broken by chunk id. A question with no
    /// searchable word (only stop words or punctuation) finds nothing.
    pub async fn retrieve_passages(&self, question: &str, k: usize) -> Result<Vec<Passage>> {
        if !(1..=MAX_K).contains(&k) {
            return Err(StoreError::InvalidInput(format!(
                "k must be between 1 and {MAX_K}, not {k}"
            )));
        }
        let rows = sqlx::query(
            "WITH q AS (
                 SELECT to_tsquery('simple', string_agg(quote_literal(lexeme), ' | ')) AS query
                   FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS lexeme
             )
             SELECT c.id, c.document_id, c.revision_id, c.start_byte, c.text, d.title,
                    ts_rank(c.text_search, q.query) AS rank
               FROM q
               JOIN chunks c ON c.text_search @@ q.query
               JOIN documents d ON d.id = c.document_id AND d.current_revision_id = c.revision_id
              WHERE q.query IS NOT NULL
              ORDER BY rank DESC, c.id
              LIMIT $2",
        )
        .bind(question)
        .bind(k as i64)
        .fetch_all(&self.pool)
        .await?;
        let words = question_words(question);
        rows.into_iter()
            .map(|r| {
                let chunk_start = to_usize(r.try_get("start_byte")?, "chunk start")?;
                let text: String = r.try_get("text")?;
                let (s, e) = narrow(&text, &words);
                Ok(Passage {
                    chunk_id: r.try_get("id")?,
                    document_id: r.try_get("document_id")?,
                    revision_id: r.try_get("revision_id")?,
                    title: r.try_get("title")?,
                    text: text[s..e].to_owned(),
                    start: chunk_start + s,
                    end: chunk_start + e,
                    rank: r.try_get("rank")?,
                })
            })
            .collect()
    }

    /// For each passage, the stored **promoted** claims whose quote lies wholly inside it
    /// (same revision, `start <= quote_start`, `quote_end <= end`), by claim id. A claim
    /// pending review, rejected, denied or not yet judged is not attached: answers, like
    /// export, stand only on what relata's policy or a named person promoted.
    pub async fn attach_claims(&self, passages: &[Passage]) -> Result<Vec<Vec<AttachedClaim>>> {
        let mut out = vec![Vec::new(); passages.len()];
        if passages.is_empty() {
            return Ok(out);
        }
        let (idx, revs, starts, ends) = passage_arrays(passages)?;
        let rows = sqlx::query(
            "SELECT p.idx, cl.id, cl.statement, cl.quote, cl.quote_start, cl.quote_end
               FROM unnest($1::int[], $2::bigint[], $3::int[], $4::int[])
                    AS p(idx, revision_id, start_byte, end_byte)
               JOIN claims cl ON cl.revision_id = p.revision_id
                             AND cl.quote_start >= p.start_byte
                             AND cl.quote_end <= p.end_byte
              WHERE relata_promoted('claim', cl.id)
              ORDER BY p.idx, cl.id",
        )
        .bind(&idx)
        .bind(&revs)
        .bind(&starts)
        .bind(&ends)
        .fetch_all(&self.pool)
        .await?;
        for r in rows {
            let i = to_usize(r.try_get("idx")?, "passage index")?;
            out[i].push(AttachedClaim {
                claim_id: r.try_get("id")?,
                statement: r.try_get("statement")?,
                quote: r.try_get("quote")?,
                quote_start: to_usize(r.try_get("quote_start")?, "quote start")?,
                quote_end: to_usize(r.try_get("quote_end")?, "quote end")?,
            });
        }
        Ok(out)
    }

    /// The stored `contradicts` relations of the classify task version with fingerprint
    /// `classify_fingerprint` between claims whose quotes lie inside `passages`, by
    /// relation id, each with the first passage holding either claim.
    ///
    /// Unlike [`Store::attach_claims`], this does not stop at promoted rows: a relation or
    /// claim still waiting for review (or for the policy) is listed with `pending_review`
    /// set, because a contradiction nobody has looked at yet is exactly what the person
    /// asking must see. Only what was rejected by a person or denied by the policy is left
    /// out.
    pub async fn contradictions(
        &self,
        classify_fingerprint: &str,
        passages: &[Passage],
    ) -> Result<Vec<Contradiction>> {
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        let (idx, revs, starts, ends) = passage_arrays(passages)?;
        let rows = sqlx::query(concat!(
            held_claims!(),
            "
             SELECT x.claim_a, x.claim_b, ha.idx AS idx_a, hb.idx AS idx_b,
                    NOT (relata_promoted('relation', x.id)
                         AND relata_promoted('claim', x.claim_a)
                         AND relata_promoted('claim', x.claim_b)) AS pending_review
               FROM claim_relations x
               JOIN held ha ON ha.claim_id = x.claim_a
               JOIN held hb ON hb.claim_id = x.claim_b
              WHERE x.relation = 'contradicts' AND x.task_version_fingerprint = $1
                AND relata_candidate_state('relation', x.id) NOT IN ('rejected', 'denied')
                AND NOT relata_kept_apart(x.claim_a, x.claim_b)
              ORDER BY x.id"
        ))
        .bind(classify_fingerprint)
        .bind(&idx)
        .bind(&revs)
        .bind(&starts)
        .bind(&ends)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|r| {
                Ok(Contradiction {
                    claim_a: r.try_get("claim_a")?,
                    claim_b: r.try_get("claim_b")?,
                    passage_a: to_usize(r.try_get("idx_a")?, "passage index")?,
                    passage_b: to_usize(r.try_get("idx_b")?, "passage index")?,
                    pending_review: r.try_get("pending_review")?,
                })
            })
            .collect()
    }

    /// Passages, beyond `passages`, that hold a claim contradicting one of theirs: for
    /// each stored `contradicts` relation of the classify version `classify_fingerprint`
    /// (not rejected or denied) between a claim inside `passages` and one outside them,
    /// the other claim's chunk in its document's current revision, shown around its quote.
    /// At most `limit`, one per chunk, by relation id.
    ///
    /// A contradiction is between two claims about one thing: retrieval finds the passages
    /// that match the question's words, and this brings the other side of what they say,
    /// so neither the person asking nor the model sees one side only. Like
    /// [`Store::contradictions`] it follows the canonical entity: a relation whose claims
    /// are about entities resolution now keeps apart (a join a person undid) is left out.
    pub async fn contradicting_passages(
        &self,
        classify_fingerprint: &str,
        passages: &[Passage],
        limit: usize,
    ) -> Result<Vec<Passage>> {
        if passages.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let (idx, revs, starts, ends) = passage_arrays(passages)?;
        let rows = sqlx::query(concat!(
            held_claims!(),
            "
             SELECT ch.id, ch.document_id, ch.revision_id, ch.start_byte, ch.text, d.title,
                    o.quote_start, o.quote_end
               FROM claim_relations x
               JOIN held h ON h.claim_id IN (x.claim_a, x.claim_b)
               JOIN claims o ON o.id = CASE WHEN h.claim_id = x.claim_a
                                            THEN x.claim_b ELSE x.claim_a END
               JOIN documents d ON d.id = o.document_id AND d.current_revision_id = o.revision_id
               JOIN chunks ch ON ch.id = o.chunk_id
              WHERE x.relation = 'contradicts' AND x.task_version_fingerprint = $1
                AND relata_candidate_state('relation', x.id) NOT IN ('rejected', 'denied')
                AND relata_candidate_state('claim', o.id) NOT IN ('rejected', 'denied')
                AND o.id NOT IN (SELECT claim_id FROM held)
                AND NOT relata_kept_apart(x.claim_a, x.claim_b)
              ORDER BY x.id
              LIMIT $6"
        ))
        .bind(classify_fingerprint)
        .bind(&idx)
        .bind(&revs)
        .bind(&starts)
        .bind(&ends)
        // Enough rows to find `limit` distinct chunks without reading a hub's every
        // relation.
        .bind(i64::try_from(limit.saturating_mul(8)).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await?;
        let mut out: Vec<Passage> = Vec::new();
        for r in rows {
            let chunk_id: i64 = r.try_get("id")?;
            if out.len() == limit || out.iter().any(|p| p.chunk_id == chunk_id) {
                continue;
            }
            let chunk_start = to_usize(r.try_get("start_byte")?, "chunk start")?;
            let text: String = r.try_get("text")?;
            let quote = |column| -> Result<usize> {
                let at = to_usize(r.try_get(column)?, "quote offset")?;
                at.checked_sub(chunk_start)
                    .filter(|&at| at <= text.len())
                    .ok_or_else(|| {
                        StoreError::Invariant(format!(
                            "chunk {chunk_id} does not hold its claim's quote offset {at}"
                        ))
                    })
            };
            let (s, e) = around(&text, quote("quote_start")?, quote("quote_end")?);
            let Some(shown) = text.get(s..e) else {
                continue;
            };
            out.push(Passage {
                chunk_id,
                document_id: r.try_get("document_id")?,
                revision_id: r.try_get("revision_id")?,
                title: r.try_get("title")?,
                text: shown.to_owned(),
                start: chunk_start + s,
                end: chunk_start + e,
                rank: 0.0,
            });
        }
        Ok(out)
    }

    /// Record one answer; returns its id.
    pub async fn record_answer(&self, a: &NewAnswer<'_>) -> Result<i64> {
        let sources: Vec<serde_json::Value> = a
            .sources
            .iter()
            .enumerate()
            .map(|(i, (p, claims))| {
                serde_json::json!({
                    "handle": SourceHandle::nth(i as u32 + 1).to_string(),
                    "document_id": p.document_id,
                    "revision_id": p.revision_id,
                    "chunk_id": p.chunk_id,
                    "start": p.start,
                    "end": p.end,
                    "claim_ids": claims.iter().map(|c| c.claim_id).collect::<Vec<_>>(),
                })
            })
            .collect();
        let claim_ids: Vec<i64> = a
            .sources
            .iter()
            .flat_map(|(_, c)| c.iter().map(|c| c.claim_id))
            .collect();
        let citations: Vec<String> = a.citations.iter().map(|h| h.to_string()).collect();
        let reasons: Vec<&str> = a.reasons.iter().map(|r| r.as_str()).collect();
        let call = a.call.as_ref();
        let u = |v: Option<u64>| v.and_then(|v| i64::try_from(v).ok());
        let excerpt = call
            .and_then(|c| c.excerpt)
            .map(|e| relata_core::text::cut(e, crate::EXCERPT_MAX_CHARS));
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO answers (question, k, status, answer, citations, sources,
                 source_claim_ids, reasons, caveats, model, prompt_version, schema_id,
                 schema_version, schema_sha256, sent_schema_sha256, started_at, finished_at,
                 duration_ms, attempts, prompt_tokens, completion_tokens, excerpt)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                     $17, $18, $19, $20, $21, $22)
             RETURNING id",
        )
        .bind(a.question)
        .bind(to_i32(a.k, "k")?)
        .bind(a.status.as_str())
        .bind(a.answer)
        .bind(&citations)
        .bind(serde_json::Value::Array(sources))
        .bind(&claim_ids)
        .bind(&reasons)
        .bind(&a.caveats)
        .bind(call.map(|c| c.model))
        .bind(call.map(|c| c.prompt_version))
        .bind(call.map(|c| c.schema_id))
        .bind(call.map(|c| c.schema_version as i32))
        .bind(call.map(|c| c.schema_sha256))
        .bind(call.and_then(|c| c.sent_schema_sha256))
        .bind(call.map(|c| c.started_at))
        .bind(call.map(|c| c.finished_at))
        .bind(call.map(|c| i64::try_from(c.duration_ms).unwrap_or(i64::MAX)))
        .bind(call.map(|c| c.attempts as i32))
        .bind(u(call.and_then(|c| c.prompt_tokens)))
        .bind(u(call.and_then(|c| c.completion_tokens)))
        .bind(excerpt)
        .fetch_one(&self.pool)
        .await?;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_chunk_is_its_own_passage() {
        assert_eq!(narrow("Paris is in France.", &[]), (0, 19));
    }

    #[test]
    fn a_long_chunk_is_narrowed_to_the_sentences_holding_the_question() {
        let filler = "Nothing of interest is said in this sentence at all. ".repeat(40);
        let text = format!("{filler}Marie Curie was born in Warsaw. {filler}");
        let words = question_words("Where was Marie Curie born?");
        let (s, e) = narrow(&text, &words);
        assert!(e - s <= PASSAGE_MAX_BYTES);
        assert!(text[s..e].contains("Marie Curie was born in Warsaw."));
        assert!(text.is_char_boundary(s) && text.is_char_boundary(e));
    }

    #[test]
    fn a_claim_in_a_long_chunk_is_shown_with_its_neighbours_within_the_bound() {
        assert_eq!(around("Paris is in France.", 0, 5), (0, 19));
        // Distinct sentences: the splitter drops repeats.
        let filler: String = (10..50)
            .map(|i| format!("Nothing of interest is said in sentence {i} at all. "))
            .collect();
        for text in [
            format!("{filler}Marie Curie was born in Warsaw. {filler}"),
            format!("Marie Curie was born in Warsaw. {filler}"),
            format!("{filler}Marie Curie was born in Warsaw."),
        ] {
            let qs = text.find("born in Warsaw").unwrap();
            let qe = qs + "born in Warsaw".len();
            let (s, e) = around(&text, qs, qe);
            assert!(s <= qs && qe <= e, "{s}..{e} must hold {qs}..{qe}");
            assert!(e - s <= PASSAGE_MAX_BYTES, "{}", e - s);
            // Neighbours fill the bound: less than one filler sentence is left over.
            assert!(e - s + 50 > PASSAGE_MAX_BYTES, "{}", e - s);
            assert!(text.is_char_boundary(s) && text.is_char_boundary(e));
        }
    }
}
