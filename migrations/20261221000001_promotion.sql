-- Promotion: every row the gate accepted is a candidate until a decision promotes it.
--
-- * `evidence` is the append-only log of every decision (the policy's and a person's),
--   a hash chain: each record carries the sha256 of its candidate's canonical content
--   (`relata_candidate_sha256`), the sha256 of the previous record and its own sha256
--   (computed by relata-store over the record's fields; `relata evidence verify`
--   recomputes both). Triggers refuse UPDATE, DELETE and TRUNCATE.
-- * `evidence_head` holds the last record's position and hash, so that deleting the last
--   record is caught too. Decisions are appended in batches by a promoter beside the
--   workers' commits, never inside them: the commit path does not touch this row.
-- * `promotions` holds each decided candidate's current state; `candidate_states` adds
--   the candidates not yet judged by the policy (`proposed`).

CREATE TABLE evidence (
    seq              bigint PRIMARY KEY CHECK (seq >= 1),
    candidate_kind   text NOT NULL CHECK (candidate_kind IN ('entity', 'claim', 'relation')),
    candidate_id     bigint NOT NULL,
    candidate_sha256 text NOT NULL CHECK (candidate_sha256 ~ '^[0-9a-f]{64}$'),
    -- The model call that proposed the candidate; null only when it is not on record
    -- (such a candidate is denied).
    call_id          bigint,
    -- The task version (relata_core::TaskVersion::fingerprint) of the job that proposed
    -- it: an approval names the version it approved.
    task_version     text NOT NULL,
    actor_kind       text NOT NULL CHECK (actor_kind IN ('policy', 'reviewer')),
    -- The policy rule's name or the reviewer's name.
    actor            text NOT NULL CHECK (actor <> ''),
    decision         text NOT NULL CHECK (decision IN ('allow', 'review', 'deny', 'approve', 'reject')),
    reasons          text[] NOT NULL DEFAULT '{}',
    note             text,
    decided_at       timestamptz NOT NULL,
    prev_sha256      text NOT NULL CHECK (prev_sha256 ~ '^[0-9a-f]{64}$'),
    sha256           text NOT NULL UNIQUE CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    CHECK ((actor_kind = 'policy') = (decision IN ('allow', 'review', 'deny')))
);
CREATE INDEX evidence_candidate_idx ON evidence (candidate_kind, candidate_id, seq);

CREATE FUNCTION evidence_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the evidence log is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER evidence_no_update BEFORE UPDATE OR DELETE ON evidence
    FOR EACH ROW EXECUTE FUNCTION evidence_is_append_only();
CREATE TRIGGER evidence_no_truncate BEFORE TRUNCATE ON evidence
    FOR EACH STATEMENT EXECUTE FUNCTION evidence_is_append_only();

-- One row: the chain's end. seq 0 and 64 zeros before the first record.
CREATE TABLE evidence_head (
    one    boolean PRIMARY KEY DEFAULT true CHECK (one),
    seq    bigint NOT NULL CHECK (seq >= 0),
    sha256 text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$')
);
INSERT INTO evidence_head (seq, sha256) VALUES (0, repeat('0', 64));

CREATE TABLE promotions (
    candidate_kind text NOT NULL CHECK (candidate_kind IN ('entity', 'claim', 'relation')),
    candidate_id   bigint NOT NULL,
    state          text NOT NULL CHECK (state IN ('pending', 'promoted', 'rejected', 'denied')),
    -- The policy's verdict: its decision, the deciding rule, and why (one reason a line).
    policy_decision text NOT NULL CHECK (policy_decision IN ('allow', 'review', 'deny')),
    rule           text NOT NULL,
    reasons        text[] NOT NULL DEFAULT '{}',
    -- The sources of the documents it came from (two for a relation across sources).
    sources        text[] NOT NULL,
    -- The revision(s) the candidate was proposed from; a candidate whose document has a
    -- newer current revision is stale and cannot be approved.
    revision_ids   bigint[] NOT NULL,
    evidence_seq   bigint NOT NULL REFERENCES evidence (seq),
    proposed_at    timestamptz NOT NULL,
    decided_at     timestamptz NOT NULL,
    PRIMARY KEY (candidate_kind, candidate_id)
);
CREATE INDEX promotions_state_idx ON promotions (state, proposed_at);
CREATE INDEX promotions_pending_idx ON promotions (candidate_kind, proposed_at) WHERE state = 'pending';

-- The canonical content of a candidate, hashed: what a decision was about. Null when the
-- candidate does not exist. The store and `relata evidence verify` both hash through
-- this function, so they can never disagree about the encoding.
CREATE FUNCTION relata_candidate_sha256(kind text, cid bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT encode(sha256(convert_to(content::text, 'UTF8')), 'hex')
    FROM (
        SELECT jsonb_build_array('entity', e.id, e.call_id, e.job_id, e.document_id,
                   e.revision_id, e.chunk_id, e.row_index, e.name, e.name_normalized,
                   e.entity_type) AS content
        FROM entities e WHERE kind = 'entity' AND e.id = cid
        UNION ALL
        SELECT jsonb_build_array('claim', c.id, c.call_id, c.job_id, c.document_id,
                   c.revision_id, c.chunk_id, c.row_index, c.statement, c.quote,
                   c.quote_start, c.quote_end, c.subject, c.subject_normalized, c.entity_id)
        FROM claims c WHERE kind = 'claim' AND c.id = cid
        UNION ALL
        SELECT jsonb_build_array('relation', x.id, x.call_id, x.job_id, x.claim_a, x.claim_b,
                   x.relation, x.task_version_fingerprint, x.row_index)
        FROM claim_relations x WHERE kind = 'relation' AND x.id = cid
    ) t
$$;

-- Whether a candidate is promoted (export and answers read only these).
CREATE FUNCTION relata_promoted(kind text, id bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM promotions p
                   WHERE p.candidate_kind = kind AND p.candidate_id = id
                     AND p.state = 'promoted')
$$;

-- Every candidate and its state; `proposed` for those the policy has not judged yet.
CREATE VIEW candidate_states AS
    SELECT 'entity'::text AS kind, e.id, e.call_id, coalesce(p.state, 'proposed') AS state
    FROM entities e
    LEFT JOIN promotions p ON p.candidate_kind = 'entity' AND p.candidate_id = e.id
    UNION ALL
    SELECT 'claim', c.id, c.call_id, coalesce(p.state, 'proposed')
    FROM claims c
    LEFT JOIN promotions p ON p.candidate_kind = 'claim' AND p.candidate_id = c.id
    UNION ALL
    SELECT 'relation', x.id, x.call_id, coalesce(p.state, 'proposed')
    FROM claim_relations x
    LEFT JOIN promotions p ON p.candidate_kind = 'relation' AND p.candidate_id = x.id;

-- The row itself as JSON, for `relata review list/show` and the review page.
CREATE FUNCTION relata_candidate_row(kind text, cid bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('id', e.id, 'document_id', e.document_id,
               'revision_id', e.revision_id, 'chunk_id', e.chunk_id, 'name', e.name,
               'type', e.entity_type, 'call_id', e.call_id)
    FROM entities e WHERE kind = 'entity' AND e.id = cid
    UNION ALL
    SELECT jsonb_build_object('id', c.id, 'document_id', c.document_id,
               'revision_id', c.revision_id, 'chunk_id', c.chunk_id,
               'statement', c.statement, 'quote', c.quote, 'quote_start', c.quote_start,
               'quote_end', c.quote_end, 'subject', c.subject, 'entity_id', c.entity_id,
               'call_id', c.call_id)
    FROM claims c WHERE kind = 'claim' AND c.id = cid
    UNION ALL
    SELECT jsonb_build_object('id', x.id, 'claim_a', x.claim_a, 'claim_b', x.claim_b,
               'relation', x.relation, 'statement_a', a.statement,
               'statement_b', b.statement, 'call_id', x.call_id)
    FROM claim_relations x JOIN claims a ON a.id = x.claim_a JOIN claims b ON b.id = x.claim_b
    WHERE kind = 'relation' AND x.id = cid
$$;

-- The policy looks up each candidate's warnings.
CREATE INDEX warnings_entity_idx ON warnings (entity_id) WHERE entity_id IS NOT NULL;
CREATE INDEX warnings_claim_idx ON warnings (claim_id) WHERE claim_id IS NOT NULL;
CREATE INDEX warnings_relation_idx ON warnings (relation_id) WHERE relation_id IS NOT NULL;
