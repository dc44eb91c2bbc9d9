-- A candidate's state is its latest decision in the evidence log; `promotions` holds only
-- the candidates the policy sent to a person (the review queue and what people decided).
--
-- Every policy decision wrote two rows: its evidence record and a `promotions` row
-- repeating the decision as a state. For a candidate the policy allowed or denied, that
-- second row said nothing the record does not, and on a saturated machine writing it was
-- about two fifths of what promotion cost the database (BENCHMARKS.md §1b). The state now
-- comes from the log itself — append-only, hash-chained, checked by `relata evidence
-- verify` — so a `promotions` row edited behind relata's back can no longer promote
-- anything: `relata_promoted` does not read that table.
--
-- The latest record's decision decides: allow and approve promote, review holds for a
-- person (pending), deny and reject never promote; no record is `proposed`.

-- The state a decision leaves its candidate in (null: no decision, `proposed`).
CREATE FUNCTION relata_state_after(decision text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE decision
               WHEN 'allow' THEN 'promoted'
               WHEN 'approve' THEN 'promoted'
               WHEN 'review' THEN 'pending'
               WHEN 'deny' THEN 'denied'
               WHEN 'reject' THEN 'rejected'
           END
$$;

-- One candidate's state: for readers that ask about a few rows (answers).
CREATE FUNCTION relata_candidate_state(kind text, cid bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        relata_state_after((SELECT e.decision FROM evidence e
                            WHERE e.candidate_kind = kind AND e.candidate_id = cid
                            ORDER BY e.seq DESC LIMIT 1)),
        'proposed')
$$;

CREATE OR REPLACE FUNCTION relata_promoted(kind text, id bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT relata_candidate_state(kind, id) = 'promoted'
$$;

-- Every decided candidate's state: for readers that go through whole tables (export,
-- status), which join it instead of looking each row up (a look-up per row made an
-- export of 80,000 candidates take twice as long). Candidates without a row here are
-- `proposed`.
CREATE VIEW decided_states AS
    SELECT DISTINCT ON (candidate_kind, candidate_id)
           candidate_kind, candidate_id, relata_state_after(decision) AS state
    FROM evidence
    ORDER BY candidate_kind, candidate_id, seq DESC;

CREATE OR REPLACE VIEW candidate_states AS
    SELECT 'entity'::text AS kind, e.id, e.call_id, coalesce(p.state, 'proposed') AS state
    FROM entities e
    LEFT JOIN decided_states p ON p.candidate_kind = 'entity' AND p.candidate_id = e.id
    UNION ALL
    SELECT 'claim', c.id, c.call_id, coalesce(p.state, 'proposed')
    FROM claims c
    LEFT JOIN decided_states p ON p.candidate_kind = 'claim' AND p.candidate_id = c.id
    UNION ALL
    SELECT 'relation', x.id, x.call_id, coalesce(p.state, 'proposed')
    FROM claim_relations x
    LEFT JOIN decided_states p ON p.candidate_kind = 'relation' AND p.candidate_id = x.id;

-- Where a candidate came from, as a review listing shows it: its documents' sources, the
-- revisions it was proposed from and when it was proposed (as the promoter reads them).
CREATE FUNCTION relata_candidate_origin(kind text, cid bigint)
RETURNS TABLE (sources text[], revision_ids bigint[], proposed_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT ARRAY[d.source], ARRAY[e.revision_id], m.finished_at
    FROM entities e JOIN documents d ON d.id = e.document_id
    LEFT JOIN model_calls m ON m.id = e.call_id
    WHERE kind = 'entity' AND e.id = cid
    UNION ALL
    SELECT ARRAY[d.source], ARRAY[c.revision_id], c.created_at
    FROM claims c JOIN documents d ON d.id = c.document_id
    WHERE kind = 'claim' AND c.id = cid
    UNION ALL
    SELECT ARRAY(SELECT DISTINCT s FROM unnest(ARRAY[da.source, db.source]) s ORDER BY s),
           ARRAY[a.revision_id, b.revision_id], m.finished_at
    FROM claim_relations x
    JOIN claims a ON a.id = x.claim_a
    JOIN claims b ON b.id = x.claim_b
    JOIN documents da ON da.id = a.document_id
    JOIN documents db ON db.id = b.document_id
    LEFT JOIN model_calls m ON m.id = x.call_id
    WHERE kind = 'relation' AND x.id = cid
$$;

-- Every decided candidate as a review listing shows it: the review queue's rows, and the
-- candidates the policy allowed or denied, from their records. Each branch's state is a
-- constant, so a listing of one state never reads the others. A candidate whose call is
-- not on record (denied for it) was proposed no later than it was decided.
CREATE VIEW candidate_decisions AS
    SELECT p.candidate_kind, p.candidate_id, p.state, p.rule, p.reasons, p.sources,
           p.revision_ids, p.proposed_at, p.decided_at
    FROM promotions p
    UNION ALL
    SELECT e.candidate_kind, e.candidate_id, 'promoted'::text, e.actor, e.reasons, o.sources,
           o.revision_ids, coalesce(o.proposed_at, e.decided_at), e.decided_at
    FROM evidence e CROSS JOIN LATERAL relata_candidate_origin(e.candidate_kind, e.candidate_id) o
    WHERE e.decision = 'allow'
    UNION ALL
    SELECT e.candidate_kind, e.candidate_id, 'denied'::text, e.actor, e.reasons, o.sources,
           o.revision_ids, coalesce(o.proposed_at, e.decided_at), e.decided_at
    FROM evidence e CROSS JOIN LATERAL relata_candidate_origin(e.candidate_kind, e.candidate_id) o
    WHERE e.decision = 'deny';

-- The rows the log now says on its own. Every one of them was checked against its record
-- by `relata evidence verify`'s rules before this change; the records stay.
DELETE FROM promotions WHERE policy_decision <> 'review';
ALTER TABLE promotions
    ADD CONSTRAINT promotions_review_only CHECK (policy_decision = 'review');
