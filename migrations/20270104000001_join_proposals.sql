-- A model's proposal that two entities no rule joins are one thing (`relata entities
-- propose`, task `join`, contract `relata.join` v1). Each ask is a job in the ledger (no
-- queue: the command asks and commits in one go), with its call record and, when the
-- gate refuses the response, its invalid-output row. A verdict the gate accepts is one
-- row here, with its evidence: the sentence handle the model cited and the words it
-- copied, found in that sentence's revision. Only a verdict `one` is a candidate: the
-- policy holds it for a named person, and an approved one is applied by re-resolution
-- as a person's join. The model never writes `entity_joins`.

ALTER TABLE model_calls DROP CONSTRAINT model_calls_task_check;
ALTER TABLE model_calls ADD CONSTRAINT model_calls_task_check
    CHECK (task IN ('extract', 'classify', 'join'));
ALTER TABLE jobs DROP CONSTRAINT jobs_task_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_task_check
    CHECK (task IN ('extract', 'classify', 'join'));
ALTER TABLE invalid_outputs DROP CONSTRAINT invalid_outputs_task_check;
ALTER TABLE invalid_outputs ADD CONSTRAINT invalid_outputs_task_check
    CHECK (task IN ('extract', 'classify', 'join'));

ALTER TABLE invalid_outputs DROP CONSTRAINT invalid_outputs_row_kind_check;
ALTER TABLE invalid_outputs ADD CONSTRAINT invalid_outputs_row_kind_check
    CHECK (row_kind IN ('entity', 'claim', 'relation', 'join'));
ALTER TABLE evidence DROP CONSTRAINT evidence_candidate_kind_check;
ALTER TABLE evidence ADD CONSTRAINT evidence_candidate_kind_check
    CHECK (candidate_kind IN ('entity', 'claim', 'relation', 'join'));
ALTER TABLE promotions DROP CONSTRAINT promotions_candidate_kind_check;
ALTER TABLE promotions ADD CONSTRAINT promotions_candidate_kind_check
    CHECK (candidate_kind IN ('entity', 'claim', 'relation', 'join'));

CREATE TABLE entity_join_proposals (
    id                   bigserial PRIMARY KEY,
    call_id              bigint NOT NULL REFERENCES model_calls (id),
    job_id               text NOT NULL UNIQUE REFERENCES jobs (job_id),
    -- The two mentions (entity rows) the pair was asked about.
    entity_id            bigint NOT NULL REFERENCES entities (id),
    joined_to            bigint NOT NULL REFERENCES entities (id),
    verdict              text NOT NULL CHECK (verdict IN ('one', 'two', 'unsure')),
    source_handle        text NOT NULL,
    evidence_revision_id bigint NOT NULL REFERENCES document_revisions (id),
    evidence_start       integer NOT NULL CHECK (evidence_start >= 0),
    evidence_end         integer NOT NULL CHECK (evidence_end > evidence_start),
    evidence_quote       text NOT NULL,
    created_at           timestamptz NOT NULL DEFAULT now(),
    CHECK (entity_id <> joined_to)
);
CREATE INDEX entity_join_proposals_one_idx ON entity_join_proposals (id) WHERE verdict = 'one';

CREATE FUNCTION relata_join_sha256(p entity_join_proposals) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT encode(sha256(convert_to(jsonb_build_array('join', p.id, p.call_id, p.job_id,
               p.entity_id, p.joined_to, p.verdict, p.source_handle,
               p.evidence_revision_id, p.evidence_start, p.evidence_end,
               p.evidence_quote)::text, 'UTF8')), 'hex')
$$;

CREATE OR REPLACE FUNCTION relata_candidate_sha256(kind text, cid bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT relata_entity_sha256(e) FROM entities e WHERE kind = 'entity' AND e.id = cid
    UNION ALL
    SELECT relata_claim_sha256(c) FROM claims c WHERE kind = 'claim' AND c.id = cid
    UNION ALL
    SELECT relata_relation_sha256(x) FROM claim_relations x
    WHERE kind = 'relation' AND x.id = cid
    UNION ALL
    SELECT relata_join_sha256(p) FROM entity_join_proposals p
    WHERE kind = 'join' AND p.id = cid AND p.verdict = 'one'
$$;

CREATE OR REPLACE FUNCTION relata_candidate_origin(kind text, cid bigint)
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
    UNION ALL
    SELECT ARRAY(SELECT DISTINCT s FROM unnest(ARRAY[da.source, db.source]) s ORDER BY s),
           ARRAY[a.revision_id, b.revision_id], m.finished_at
    FROM entity_join_proposals p
    JOIN entities a ON a.id = p.entity_id
    JOIN entities b ON b.id = p.joined_to
    JOIN documents da ON da.id = a.document_id
    JOIN documents db ON db.id = b.document_id
    LEFT JOIN model_calls m ON m.id = p.call_id
    WHERE kind = 'join' AND p.id = cid AND p.verdict = 'one'
$$;

CREATE OR REPLACE FUNCTION relata_candidate_row(kind text, cid bigint) RETURNS jsonb
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
    UNION ALL
    SELECT jsonb_build_object('id', p.id, 'entity_id', p.entity_id, 'joined_to', p.joined_to,
               'name_a', a.name, 'type_a', a.entity_type, 'document_a', a.document_id,
               'name_b', b.name, 'type_b', b.entity_type, 'document_b', b.document_id,
               'verdict', p.verdict, 'source', p.source_handle,
               'quote', p.evidence_quote, 'revision_id', p.evidence_revision_id,
               'quote_start', p.evidence_start, 'quote_end', p.evidence_end,
               'evidence_document_id', (SELECT r.document_id FROM document_revisions r
                                        WHERE r.id = p.evidence_revision_id),
               'call_id', p.call_id)
    FROM entity_join_proposals p
    JOIN entities a ON a.id = p.entity_id JOIN entities b ON b.id = p.joined_to
    WHERE kind = 'join' AND p.id = cid AND p.verdict = 'one'
$$;

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
    LEFT JOIN decided_states p ON p.candidate_kind = 'relation' AND p.candidate_id = x.id
    UNION ALL
    SELECT 'join', j.id, j.call_id, coalesce(p.state, 'proposed')
    FROM entity_join_proposals j
    LEFT JOIN decided_states p ON p.candidate_kind = 'join' AND p.candidate_id = j.id
    WHERE j.verdict = 'one';

-- The proposals a decision promoted (allowed by a rule, or approved by a person; the
-- latest record holds): re-resolution applies each as a person's join, in that
-- decision's name.
CREATE VIEW promoted_join_proposals AS
    SELECT p.id, p.entity_id, p.joined_to, p.evidence_quote, v.actor, v.note, v.decided_at
    FROM entity_join_proposals p
    JOIN LATERAL (SELECT e.actor, e.note, e.decided_at, e.decision FROM evidence e
                  WHERE e.candidate_kind = 'join' AND e.candidate_id = p.id
                  ORDER BY e.seq DESC LIMIT 1) v ON v.decision IN ('allow', 'approve')
    WHERE p.verdict = 'one';
