-- A new closed reason: `unstorable`, for model output the store cannot hold (a NUL,
-- U+0000, in a string: PostgreSQL text refuses it). The gate rejects such a row so it is
-- recorded once and never asked for again.
ALTER TABLE invalid_outputs DROP CONSTRAINT invalid_outputs_reason_check;
ALTER TABLE invalid_outputs ADD CONSTRAINT invalid_outputs_reason_check
    CHECK (reason IN ('empty', 'too_large', 'not_json', 'trailing_content',
        'schema', 'unknown_field', 'bad_enum', 'unknown_handle', 'unrequested_pair',
        'quote_not_found', 'degenerate', 'unknown_subject', 'duplicate', 'truncated',
        'refusal', 'inconsistent', 'unsupported', 'unstorable'));

-- A new dead reason: `store_rejected`, for a job whose outcome the store refused for a
-- reason other than availability; retrying it would only ask the model again.
ALTER TABLE jobs DROP CONSTRAINT jobs_dead_reason_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_dead_reason_check
    CHECK (dead_reason IN ('transport_exhausted', 'permanent_provider', 'poison',
        'missing_input', 'delivery_limit', 'version_mismatch', 'store_rejected'));
