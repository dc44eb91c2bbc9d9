-- The canonical content of a candidate, hashed from its row: one function per kind, which
-- the planner inlines, so the promoter hashes the rows it has already read instead of
-- looking each one up again through `relata_candidate_sha256`. That function keeps its
-- signature and its output (every hash already in the evidence log still matches) and
-- now calls these, so the encoding is still written once.
CREATE FUNCTION relata_entity_sha256(e entities) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT encode(sha256(convert_to(jsonb_build_array('entity', e.id, e.call_id, e.job_id,
               e.document_id, e.revision_id, e.chunk_id, e.row_index, e.name,
               e.name_normalized, e.entity_type)::text, 'UTF8')), 'hex')
$$;

CREATE FUNCTION relata_claim_sha256(c claims) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT encode(sha256(convert_to(jsonb_build_array('claim', c.id, c.call_id, c.job_id,
               c.document_id, c.revision_id, c.chunk_id, c.row_index, c.statement, c.quote,
               c.quote_start, c.quote_end, c.subject, c.subject_normalized,
               c.entity_id)::text, 'UTF8')), 'hex')
$$;

CREATE FUNCTION relata_relation_sha256(x claim_relations) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT encode(sha256(convert_to(jsonb_build_array('relation', x.id, x.call_id, x.job_id,
               x.claim_a, x.claim_b, x.relation, x.task_version_fingerprint,
               x.row_index)::text, 'UTF8')), 'hex')
$$;

CREATE OR REPLACE FUNCTION relata_candidate_sha256(kind text, cid bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT relata_entity_sha256(e) FROM entities e WHERE kind = 'entity' AND e.id = cid
    UNION ALL
    SELECT relata_claim_sha256(c) FROM claims c WHERE kind = 'claim' AND c.id = cid
    UNION ALL
    SELECT relata_relation_sha256(x) FROM claim_relations x
    WHERE kind = 'relation' AND x.id = cid
$$;
