-- A new closed reason: `unsupported`, for a claim whose statement its own quote does not
-- support (the `supported` check of the gate's semantic layer).
ALTER TABLE invalid_outputs DROP CONSTRAINT invalid_outputs_reason_check;
ALTER TABLE invalid_outputs ADD CONSTRAINT invalid_outputs_reason_check
    CHECK (reason IN ('empty', 'too_large', 'not_json', 'trailing_content',
        'schema', 'unknown_field', 'bad_enum', 'unknown_handle', 'unrequested_pair',
        'quote_not_found', 'degenerate', 'unknown_subject', 'duplicate', 'truncated',
        'refusal', 'inconsistent', 'unsupported'));
