-- relata's system of record: documents and their revisions, chunks, the evidence record
-- of every model call, the job ledger, the rows the gate accepted, the rows it rejected,
-- warnings, and the pair reservations that keep classification bounded.
--
-- Conventions:
-- * Closed enums (relata-core's labels) are stored as text with a CHECK listing every
--   value, so that a value outside the set can never be written, and adding one is a
--   visible migration.
-- * Byte offsets are UTF-8 byte offsets, stored as integer (texts are bounded far below
--   2 GiB); Rust converts with checked arithmetic.
-- * Texts are never rewritten in place: a changed document gets a new revision, and every
--   row extracted from an old revision stays, still pointing at the text its offsets were
--   computed against.

CREATE TABLE documents (
    id                  bigserial PRIMARY KEY,
    source              text NOT NULL,
    external_id         text NOT NULL,
    title               text,
    -- Set in the same transaction that creates the first revision; the foreign key is
    -- added below because the two tables refer to each other.
    current_revision_id bigint,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source, external_id)
);

CREATE TABLE document_revisions (
    id          bigserial PRIMARY KEY,
    document_id bigint NOT NULL REFERENCES documents (id),
    sha256      text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    text        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (document_id, sha256),
    -- Target of the composite foreign keys below: a chunk, entity or claim cannot name a
    -- revision of another document.
    UNIQUE (id, document_id)
);

ALTER TABLE documents
    ADD CONSTRAINT documents_current_revision_fk
    FOREIGN KEY (current_revision_id, id) REFERENCES document_revisions (id, document_id);

CREATE TABLE chunks (
    id          bigserial PRIMARY KEY,
    revision_id bigint NOT NULL,
    document_id bigint NOT NULL,
    ordinal     integer NOT NULL CHECK (ordinal >= 0),
    -- Byte offsets into the revision text; `text` is exactly those bytes (checked in Rust
    -- before insert).
    start_byte  integer NOT NULL CHECK (start_byte >= 0),
    end_byte    integer NOT NULL CHECK (end_byte > start_byte),
    text        text NOT NULL,
    sha256      text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    FOREIGN KEY (revision_id, document_id) REFERENCES document_revisions (id, document_id),
    UNIQUE (revision_id, ordinal),
    UNIQUE (id, revision_id, document_id)
);

-- The evidence record: one row per model request relata made for a job (the adapter's
-- in-process transport retries are counted in `attempts`, not as separate rows).
CREATE TABLE model_calls (
    id                bigserial PRIMARY KEY,
    job_id            text NOT NULL,
    task              text NOT NULL CHECK (task IN ('extract', 'classify')),
    model             text NOT NULL,
    prompt_version    text NOT NULL,
    schema_id         text NOT NULL,
    schema_version    integer NOT NULL,
    schema_sha256     text NOT NULL,
    started_at        timestamptz NOT NULL,
    finished_at       timestamptz NOT NULL,
    duration_ms       bigint NOT NULL CHECK (duration_ms >= 0),
    attempts          integer NOT NULL CHECK (attempts >= 1),
    prompt_tokens     bigint,
    completion_tokens bigint,
    outcome           text NOT NULL CHECK (outcome IN ('accepted', 'partial', 'rejected',
                          'invalid_envelope', 'transport_error', 'permanent_error')),
    -- A relata-core Reason for rejected/invalid_envelope, a dead reason for errors.
    reason            text,
    -- Bounded (the store truncates to 2000 characters); the caller redacts secrets.
    excerpt           text CHECK (char_length(excerpt) <= 2000)
);
CREATE INDEX model_calls_job_idx ON model_calls (job_id);
CREATE INDEX model_calls_started_idx ON model_calls (started_at);

-- The job ledger. A job is terminal once its state is anything but 'queued'; a terminal
-- job is never committed again (redelivery is acked without a model call).
CREATE TABLE jobs (
    job_id                   text PRIMARY KEY CHECK (job_id ~ '^[0-9a-f]{32}$'),
    task                     text NOT NULL CHECK (task IN ('extract', 'classify')),
    task_version_fingerprint text NOT NULL,
    prompt_version           text NOT NULL,
    schema_id                text NOT NULL,
    schema_version           integer NOT NULL,
    schema_sha256            text NOT NULL,
    model                    text NOT NULL,
    chunk_id                 bigint REFERENCES chunks (id),
    -- classify: [[claim_a, claim_b], ...], each pair with claim_a < claim_b
    pairs                    jsonb,
    -- the extract job whose claims produced this classify job (for re-publishing after a
    -- crash between creating and publishing)
    origin_job_id            text REFERENCES jobs (job_id),
    state                    text NOT NULL DEFAULT 'queued'
                                 CHECK (state IN ('queued', 'accepted', 'partial', 'invalid', 'dead')),
    attempts                 integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- relata_core::DeadReason
    dead_reason              text CHECK (dead_reason IN ('transport_exhausted',
                                 'permanent_provider', 'poison', 'missing_input',
                                 'delivery_limit', 'version_mismatch')),
    dead_detail              text,
    published_at             timestamptz,
    created_at               timestamptz NOT NULL DEFAULT now(),
    updated_at               timestamptz NOT NULL DEFAULT now(),
    completed_at             timestamptz,
    CHECK ((task = 'extract') = (chunk_id IS NOT NULL)),
    CHECK ((task = 'classify') = (pairs IS NOT NULL)),
    CHECK ((state = 'dead') = (dead_reason IS NOT NULL)),
    CHECK ((state = 'queued') = (completed_at IS NULL))
);
CREATE INDEX jobs_chunk_idx ON jobs (chunk_id, task_version_fingerprint);
CREATE INDEX jobs_unpublished_idx ON jobs (task_version_fingerprint) WHERE published_at IS NULL AND state = 'queued';
CREATE INDEX jobs_origin_idx ON jobs (origin_job_id) WHERE origin_job_id IS NOT NULL;

ALTER TABLE model_calls ADD CONSTRAINT model_calls_job_fk FOREIGN KEY (job_id) REFERENCES jobs (job_id);

CREATE TABLE entities (
    id              bigserial PRIMARY KEY,
    call_id         bigint NOT NULL REFERENCES model_calls (id),
    job_id          text NOT NULL REFERENCES jobs (job_id),
    document_id     bigint NOT NULL,
    revision_id     bigint NOT NULL,
    chunk_id        bigint NOT NULL,
    row_index       integer NOT NULL CHECK (row_index >= 0),
    name            text NOT NULL,
    -- NFC + whitespace runs collapsed + lowercase (relata_store::normalize_name)
    name_normalized text NOT NULL,
    entity_type     text NOT NULL CHECK (entity_type IN ('person', 'organization', 'location',
                        'event', 'work', 'concept', 'other')),
    FOREIGN KEY (chunk_id, revision_id, document_id) REFERENCES chunks (id, revision_id, document_id),
    UNIQUE (call_id, row_index)
);
CREATE INDEX entities_name_idx ON entities (name_normalized);

CREATE TABLE claims (
    id                 bigserial PRIMARY KEY,
    call_id            bigint NOT NULL REFERENCES model_calls (id),
    job_id             text NOT NULL REFERENCES jobs (job_id),
    document_id        bigint NOT NULL,
    revision_id        bigint NOT NULL,
    chunk_id           bigint NOT NULL,
    row_index          integer NOT NULL CHECK (row_index >= 0),
    statement          text NOT NULL,
    quote              text NOT NULL,
    -- UTF-8 byte offsets into the REVISION text (chunk start + offset within the chunk).
    quote_start        integer NOT NULL CHECK (quote_start >= 0),
    quote_end          integer NOT NULL CHECK (quote_end > quote_start),
    subject            text NOT NULL,
    subject_normalized text NOT NULL,
    entity_id          bigint REFERENCES entities (id),
    created_at         timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (chunk_id, revision_id, document_id) REFERENCES chunks (id, revision_id, document_id),
    UNIQUE (call_id, row_index)
);
CREATE INDEX claims_subject_idx ON claims (subject_normalized, created_at DESC, id DESC);
CREATE INDEX claims_job_idx ON claims (job_id);

-- Guarantee 5, enforced by the database as well as by Rust: a claim's quote is its
-- revision's own text at [quote_start, quote_end) counted in UTF-8 bytes. (PostgreSQL's
-- substring on text counts characters, so the comparison is on the encoded bytes.)
CREATE FUNCTION claims_quote_is_source_text() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ok boolean;
BEGIN
    SELECT substring(convert_to(r.text, 'UTF8') FROM NEW.quote_start + 1 FOR NEW.quote_end - NEW.quote_start)
           = convert_to(NEW.quote, 'UTF8')
      INTO ok
      FROM document_revisions r
     WHERE r.id = NEW.revision_id;
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION 'claim quote is not the revision text at bytes [%, %)', NEW.quote_start, NEW.quote_end
            USING ERRCODE = 'check_violation', CONSTRAINT = 'claims_quote_is_source_text';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER claims_quote_is_source_text BEFORE INSERT OR UPDATE ON claims
    FOR EACH ROW EXECUTE FUNCTION claims_quote_is_source_text();

CREATE TABLE claim_relations (
    id                       bigserial PRIMARY KEY,
    call_id                  bigint NOT NULL REFERENCES model_calls (id),
    job_id                   text NOT NULL REFERENCES jobs (job_id),
    -- In the direction the model stated them (a relation such as `refines` is directed).
    claim_a                  bigint NOT NULL REFERENCES claims (id),
    claim_b                  bigint NOT NULL REFERENCES claims (id),
    relation                 text NOT NULL CHECK (relation IN ('supports', 'contradicts', 'refines', 'unrelated')),
    task_version_fingerprint text NOT NULL,
    row_index                integer NOT NULL CHECK (row_index >= 0),
    CHECK (claim_a <> claim_b)
);
-- One relation per unordered pair per task version.
CREATE UNIQUE INDEX claim_relations_pair_uq
    ON claim_relations (task_version_fingerprint, least(claim_a, claim_b), greatest(claim_a, claim_b));

-- Pair reservations: an unordered claim pair is classified at most once per task version.
-- A pair is reserved in the same transaction that creates the classify job carrying it,
-- so a crash can never leave a pair reserved but in no job.
CREATE TABLE classified_pairs (
    task_version_fingerprint text NOT NULL,
    claim_lo                 bigint NOT NULL REFERENCES claims (id),
    claim_hi                 bigint NOT NULL REFERENCES claims (id),
    job_id                   text NOT NULL REFERENCES jobs (job_id),
    created_at               timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_version_fingerprint, claim_lo, claim_hi),
    CHECK (claim_lo < claim_hi)
);
CREATE INDEX classified_pairs_hi_idx ON classified_pairs (task_version_fingerprint, claim_hi);

CREATE TABLE invalid_outputs (
    id        bigserial PRIMARY KEY,
    -- Null only for a job that has no call (never the case today; kept nullable so a
    -- rejection can never be dropped for lack of a call row).
    call_id   bigint REFERENCES model_calls (id),
    job_id    text NOT NULL REFERENCES jobs (job_id),
    task      text NOT NULL CHECK (task IN ('extract', 'classify')),
    reason    text NOT NULL CHECK (reason IN ('empty', 'too_large', 'not_json', 'trailing_content',
                  'schema', 'unknown_field', 'bad_enum', 'unknown_handle', 'unrequested_pair',
                  'quote_not_found', 'degenerate', 'unknown_subject', 'duplicate', 'truncated',
                  'refusal')),
    -- Both null: the whole response was rejected.
    row_kind  text CHECK (row_kind IN ('entity', 'claim', 'relation')),
    row_index integer CHECK (row_index >= 0),
    detail    text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((row_kind IS NULL) = (row_index IS NULL))
);
CREATE INDEX invalid_outputs_created_idx ON invalid_outputs (created_at);
CREATE INDEX invalid_outputs_job_idx ON invalid_outputs (job_id);

-- Warnings on kept rows; the review queue is `WHERE reviewed_at IS NULL`.
CREATE TABLE warnings (
    id          bigserial PRIMARY KEY,
    call_id     bigint NOT NULL REFERENCES model_calls (id),
    job_id      text NOT NULL REFERENCES jobs (job_id),
    row_kind    text NOT NULL CHECK (row_kind IN ('entity', 'claim', 'relation')),
    row_index   integer NOT NULL CHECK (row_index >= 0),
    entity_id   bigint REFERENCES entities (id),
    claim_id    bigint REFERENCES claims (id),
    relation_id bigint REFERENCES claim_relations (id),
    warning     text NOT NULL CHECK (warning IN ('figure_not_in_quote', 'demoted')),
    reason      text,
    detail      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    reviewed_at timestamptz,
    reviewed_by text,
    CHECK (num_nonnulls(entity_id, claim_id, relation_id) = 1)
);
CREATE INDEX warnings_review_idx ON warnings (created_at) WHERE reviewed_at IS NULL;
