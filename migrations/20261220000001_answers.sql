-- Answers (`relata ask`, `relata serve`): full-text retrieval over chunk text, and one row
-- per answered question — the question, the sources in handle order (with the claims
-- attached to each), the outcome and its reasons, and the model call's provenance.

-- Retrieval: a generated tsvector over each chunk's text (English configuration: stems
-- and stop words), indexed with GIN. Generated, so it can never disagree with the text.
ALTER TABLE chunks
    ADD COLUMN text_search tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED;
CREATE INDEX chunks_text_search_idx ON chunks USING gin (text_search);

-- New closed reasons of the answer gate.
ALTER TABLE invalid_outputs DROP CONSTRAINT invalid_outputs_reason_check;
ALTER TABLE invalid_outputs ADD CONSTRAINT invalid_outputs_reason_check
    CHECK (reason IN ('empty', 'too_large', 'not_json', 'trailing_content',
        'schema', 'unknown_field', 'bad_enum', 'unknown_handle', 'unrequested_pair',
        'quote_not_found', 'degenerate', 'unknown_subject', 'duplicate', 'truncated',
        'refusal', 'inconsistent', 'unsupported', 'unstorable',
        'uncited_answer', 'bad_abstention'));

-- New closed warnings of the answer gate (kept on answers as caveats; listed here so the
-- review queue can hold them once answers are reviewed).
ALTER TABLE warnings DROP CONSTRAINT warnings_warning_check;
ALTER TABLE warnings ADD CONSTRAINT warnings_warning_check
    CHECK (warning IN ('figure_not_in_quote', 'demoted', 'marker_mismatch',
        'figure_not_in_sources'));

CREATE TABLE answers (
    id                 bigserial PRIMARY KEY,
    question           text NOT NULL CHECK (octet_length(question) BETWEEN 1 AND 2000),
    k                  integer NOT NULL CHECK (k BETWEEN 1 AND 20),
    status             text NOT NULL CHECK (status IN ('answered', 'abstained', 'degraded')),
    -- The accepted prose; null when degraded.
    answer             text,
    -- The cited handles, as accepted (S1, S3).
    citations          text[] NOT NULL DEFAULT '{}',
    -- One object per source in handle order: handle, document_id, revision_id, chunk_id,
    -- start, end (byte offsets into the revision text) and claim_ids.
    sources            jsonb NOT NULL,
    -- Every claim attached to a source, in handle order (S1's claims first).
    source_claim_ids   bigint[] NOT NULL DEFAULT '{}',
    -- The gate's rejection reasons (relata-core Reason); non-empty exactly when degraded.
    reasons            text[] NOT NULL DEFAULT '{}'
                           CHECK (reasons <@ ARRAY['empty', 'too_large', 'not_json',
                               'trailing_content', 'schema', 'unknown_field', 'bad_enum',
                               'unknown_handle', 'unrequested_pair', 'quote_not_found',
                               'degenerate', 'unknown_subject', 'duplicate', 'truncated',
                               'refusal', 'inconsistent', 'unsupported', 'unstorable',
                               'uncited_answer', 'bad_abstention']::text[]),
    -- Every caveat returned with the answer: {reason, detail}.
    caveats            jsonb NOT NULL DEFAULT '[]',
    -- The model call, as recorded for the other tasks; all null when no source was
    -- retrieved and the model was not asked.
    model              text,
    prompt_version     text,
    schema_id          text,
    schema_version     integer,
    schema_sha256      text,
    sent_schema_sha256 text CHECK (sent_schema_sha256 ~ '^[0-9a-f]{64}$'),
    started_at         timestamptz,
    finished_at        timestamptz,
    duration_ms        bigint CHECK (duration_ms >= 0),
    attempts           integer CHECK (attempts >= 1),
    prompt_tokens      bigint,
    completion_tokens  bigint,
    -- Bounded; the caller redacts secrets.
    excerpt            text CHECK (char_length(excerpt) <= 2000),
    created_at         timestamptz NOT NULL DEFAULT now(),
    CHECK ((status = 'degraded') = (cardinality(reasons) > 0)),
    CHECK ((status = 'degraded') = (answer IS NULL)),
    CHECK (num_nulls(model, prompt_version, schema_id, schema_version, schema_sha256,
                     started_at, finished_at, duration_ms, attempts) IN (0, 9)),
    CHECK (model IS NOT NULL OR status = 'abstained')
);
CREATE INDEX answers_created_idx ON answers (created_at);
