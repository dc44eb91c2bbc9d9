-- A new closed reason: `inconsistent`, for a row whose fields disagree in a way no other
-- reason names — today a statement carrying a figure its quote does not contain, when
-- the `figure_in_quote` check is set to reject (it warns by default).
ALTER TABLE invalid_outputs DROP CONSTRAINT invalid_outputs_reason_check;
ALTER TABLE invalid_outputs ADD CONSTRAINT invalid_outputs_reason_check
    CHECK (reason IN ('empty', 'too_large', 'not_json', 'trailing_content',
        'schema', 'unknown_field', 'bad_enum', 'unknown_handle', 'unrequested_pair',
        'quote_not_found', 'degenerate', 'unknown_subject', 'duplicate', 'truncated',
        'refusal', 'inconsistent'));
