-- The promotion schema as the migrations leave it: the evidence log, its head, the review
-- queue, review tokens, the views that read a candidate's state from the log, and the
-- SQL functions promotion relies on. Generated from a freshly migrated database and
-- checked against it by the store's test `schema::the_promotion_schema_is_the_checked_in_snapshot`
-- (`RELATA_BLESS_SCHEMA=1 cargo test -p relata-store --test store schema` rewrites it
-- after a migration; read the diff before committing). Read this file, not the dozen
-- migrations that create, alter and replace these objects one after another; the
-- migrations stay as they shipped, because sqlx refuses a database whose applied
-- migrations' checksums changed.
--
-- Rules written here in SQL have a Rust twin that is their source of truth, and a store
-- test (`twins`) holds each to it: `relata_state_after` is `PromotionState::after` in
-- relata-core; the per-kind `relata_*_sha256` hashes are `relata_store::canonical` as a
-- commit uses it.
--
-- A correction to the first migration's header (20261202000001_initial.sql), which cannot
-- be edited: it calls `model_calls` "the evidence record" of every model call. Since
-- promotion, "evidence" in relata means the decision log below (`evidence`, one record
-- per decision, hash-chained); a model call's row is its provenance. That header also
-- lists the system of record as it first shipped: the promotion tables below, answers
-- and review tokens came later, and `warnings` no longer has `reviewed_at` and
-- `reviewed_by` (one review queue: `promotions`).

TABLE evidence
    seq bigint NOT NULL
    candidate_kind text NOT NULL
    candidate_id bigint NOT NULL
    candidate_sha256 bytea NOT NULL
    call_id bigint
    task_version text NOT NULL
    actor_kind text NOT NULL
    actor text NOT NULL
    decision text NOT NULL
    reasons text[] NOT NULL DEFAULT '{}'::text[]
    note text
    decided_at timestamp with time zone NOT NULL
    prev_sha256 bytea NOT NULL
    sha256 bytea NOT NULL
    via text
    via_os_user text
    via_host text
    CONSTRAINT evidence_actor_check CHECK ((actor <> ''::text))
    CONSTRAINT evidence_actor_kind_check CHECK ((actor_kind = ANY (ARRAY['policy'::text, 'reviewer'::text])))
    CONSTRAINT evidence_candidate_kind_check CHECK ((candidate_kind = ANY (ARRAY['entity'::text, 'claim'::text, 'relation'::text, 'join'::text])))
    CONSTRAINT evidence_candidate_sha256_check CHECK ((octet_length(candidate_sha256) = 32))
    CONSTRAINT evidence_check CHECK (((actor_kind = 'policy'::text) = (decision = ANY (ARRAY['allow'::text, 'review'::text, 'deny'::text]))))
    CONSTRAINT evidence_decision_check CHECK ((decision = ANY (ARRAY['allow'::text, 'review'::text, 'deny'::text, 'approve'::text, 'reject'::text])))
    CONSTRAINT evidence_pkey PRIMARY KEY (seq)
    CONSTRAINT evidence_prev_sha256_check CHECK ((octet_length(prev_sha256) = 32))
    CONSTRAINT evidence_seq_check CHECK ((seq >= 1))
    CONSTRAINT evidence_sha256_check CHECK ((octet_length(sha256) = 32))
    CONSTRAINT evidence_via_check CHECK ((via = ANY (ARRAY['review_page'::text, 'command_line'::text])))
    CONSTRAINT evidence_via_reviewer_check CHECK (((via IS NULL) OR (actor_kind = 'reviewer'::text)))
    CONSTRAINT evidence_via_shell_check CHECK ((((via = 'command_line'::text) = ((via_os_user IS NOT NULL) AND (via_host IS NOT NULL))) AND ((via IS NOT NULL) OR ((via_os_user IS NULL) AND (via_host IS NULL)))))
    CREATE INDEX evidence_candidate_idx ON public.evidence USING btree (candidate_kind, candidate_id, seq)
    CREATE UNIQUE INDEX evidence_pkey ON public.evidence USING btree (seq)
    CREATE TRIGGER evidence_no_truncate BEFORE TRUNCATE ON public.evidence FOR EACH STATEMENT EXECUTE FUNCTION evidence_is_append_only()
    CREATE TRIGGER evidence_no_update BEFORE DELETE OR UPDATE ON public.evidence FOR EACH ROW EXECUTE FUNCTION evidence_is_append_only()

TABLE evidence_head
    one boolean NOT NULL DEFAULT true
    seq bigint NOT NULL
    sha256 bytea NOT NULL
    CONSTRAINT evidence_head_one_check CHECK (one)
    CONSTRAINT evidence_head_pkey PRIMARY KEY (one)
    CONSTRAINT evidence_head_seq_check CHECK ((seq >= 0))
    CONSTRAINT evidence_head_sha256_check CHECK ((octet_length(sha256) = 32))
    CREATE UNIQUE INDEX evidence_head_pkey ON public.evidence_head USING btree (one)

TABLE promotions
    candidate_kind text NOT NULL
    candidate_id bigint NOT NULL
    state text NOT NULL
    policy_decision text NOT NULL
    rule text NOT NULL
    reasons text[] NOT NULL DEFAULT '{}'::text[]
    sources text[] NOT NULL
    revision_ids bigint[] NOT NULL
    evidence_seq bigint NOT NULL
    proposed_at timestamp with time zone NOT NULL
    decided_at timestamp with time zone NOT NULL
    CONSTRAINT promotions_candidate_kind_check CHECK ((candidate_kind = ANY (ARRAY['entity'::text, 'claim'::text, 'relation'::text, 'join'::text])))
    CONSTRAINT promotions_pkey PRIMARY KEY (candidate_kind, candidate_id)
    CONSTRAINT promotions_policy_decision_check CHECK ((policy_decision = ANY (ARRAY['allow'::text, 'review'::text, 'deny'::text])))
    CONSTRAINT promotions_review_only CHECK ((policy_decision = 'review'::text))
    CONSTRAINT promotions_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'promoted'::text, 'rejected'::text, 'denied'::text])))
    CREATE INDEX promotions_pending_idx ON public.promotions USING btree (candidate_kind, proposed_at) WHERE (state = 'pending'::text)
    CREATE UNIQUE INDEX promotions_pkey ON public.promotions USING btree (candidate_kind, candidate_id)

TABLE review_tokens
    reviewer text NOT NULL
    token_sha256 text NOT NULL
    issued_at timestamp with time zone NOT NULL DEFAULT now()
    CONSTRAINT review_tokens_pkey PRIMARY KEY (reviewer)
    CONSTRAINT review_tokens_reviewer_check CHECK (((char_length(reviewer) >= 1) AND (char_length(reviewer) <= 200)))
    CONSTRAINT review_tokens_token_sha256_check CHECK ((token_sha256 ~ '^[0-9a-f]{64}$'::text))
    CONSTRAINT review_tokens_token_sha256_key UNIQUE (token_sha256)
    CREATE UNIQUE INDEX review_tokens_pkey ON public.review_tokens USING btree (reviewer)
    CREATE UNIQUE INDEX review_tokens_token_sha256_key ON public.review_tokens USING btree (token_sha256)

VIEW decided_states
    candidate_kind text
    candidate_id bigint
    state text

VIEW candidate_states
    kind text
    id bigint
    call_id bigint
    state text

VIEW candidate_decisions
    candidate_kind text
    candidate_id bigint
    state text
    rule text
    reasons text[]
    sources text[]
    revision_ids bigint[]
    proposed_at timestamp with time zone
    decided_at timestamp with time zone

FUNCTION evidence_is_append_only() RETURNS trigger LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION 'the evidence log is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$

FUNCTION relata_candidate_origin(kind text, cid bigint) RETURNS TABLE(sources text[], revision_ids bigint[], proposed_at timestamp with time zone) LANGUAGE sql STABLE AS $$
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
$$

FUNCTION relata_candidate_row(kind text, cid bigint) RETURNS jsonb LANGUAGE sql STABLE AS $$
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
$$

FUNCTION relata_candidate_sha256(kind text, cid bigint) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT relata_entity_sha256(e) FROM entities e WHERE kind = 'entity' AND e.id = cid
    UNION ALL
    SELECT relata_claim_sha256(c) FROM claims c WHERE kind = 'claim' AND c.id = cid
    UNION ALL
    SELECT relata_relation_sha256(x) FROM claim_relations x
    WHERE kind = 'relation' AND x.id = cid
    UNION ALL
    SELECT relata_join_sha256(p) FROM entity_join_proposals p
    WHERE kind = 'join' AND p.id = cid AND p.verdict = 'one'
$$

FUNCTION relata_candidate_state(kind text, cid bigint) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        relata_state_after((SELECT e.decision FROM evidence e
                            WHERE e.candidate_kind = kind AND e.candidate_id = cid
                            ORDER BY e.seq DESC LIMIT 1)),
        'proposed')
$$

FUNCTION relata_claim_sha256(c claims) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT encode(sha256(convert_to(jsonb_build_array('claim', c.id, c.call_id, c.job_id,
               c.document_id, c.revision_id, c.chunk_id, c.row_index, c.statement, c.quote,
               c.quote_start, c.quote_end, c.subject, c.subject_normalized,
               c.entity_id)::text, 'UTF8')), 'hex')
$$

FUNCTION relata_entity_sha256(e entities) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT encode(sha256(convert_to(jsonb_build_array('entity', e.id, e.call_id, e.job_id,
               e.document_id, e.revision_id, e.chunk_id, e.row_index, e.name,
               e.name_normalized, e.entity_type)::text, 'UTF8')), 'hex')
$$

FUNCTION relata_join_sha256(p entity_join_proposals) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT encode(sha256(convert_to(jsonb_build_array('join', p.id, p.call_id, p.job_id,
               p.entity_id, p.joined_to, p.verdict, p.source_handle,
               p.evidence_revision_id, p.evidence_start, p.evidence_end,
               p.evidence_quote)::text, 'UTF8')), 'hex')
$$

FUNCTION relata_kept_apart(claim_a bigint, claim_b bigint) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1
          FROM claims ca
          JOIN entity_resolutions ra ON ra.entity_id = ca.entity_id
          JOIN claims cb ON cb.id = claim_b
          JOIN entity_resolutions rb ON rb.entity_id = cb.entity_id
         WHERE ca.id = claim_a
           AND ra.canonical_id <> rb.canonical_id)
$$

FUNCTION relata_promoted(kind text, id bigint) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT relata_candidate_state(kind, id) = 'promoted'
$$

FUNCTION relata_provenance_complete(m model_calls) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT m.id IS NOT NULL AND m.model <> '' AND m.prompt_version <> ''
           AND m.schema_id <> '' AND m.schema_sha256 <> ''
$$

FUNCTION relata_relation_sha256(x claim_relations) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT encode(sha256(convert_to(jsonb_build_array('relation', x.id, x.call_id, x.job_id,
               x.claim_a, x.claim_b, x.relation, x.task_version_fingerprint,
               x.row_index)::text, 'UTF8')), 'hex')
$$

FUNCTION relata_state_after(decision text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE decision
               WHEN 'allow' THEN 'promoted'
               WHEN 'approve' THEN 'promoted'
               WHEN 'review' THEN 'pending'
               WHEN 'deny' THEN 'denied'
               WHEN 'reject' THEN 'rejected'
           END
$$
