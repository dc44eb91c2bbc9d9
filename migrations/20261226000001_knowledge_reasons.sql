-- New closed reasons of the extract gate (issue "knowledge, not sentences"):
-- `name_not_found` (an entity name its chunk does not contain), `not_standalone` (a
-- statement that cannot be read without its document) and `wrong_subject` (a subject that
-- is not what its statement is about).
ALTER TABLE invalid_outputs DROP CONSTRAINT invalid_outputs_reason_check;
ALTER TABLE invalid_outputs ADD CONSTRAINT invalid_outputs_reason_check
    CHECK (reason IN ('empty', 'too_large', 'not_json', 'trailing_content',
        'schema', 'unknown_field', 'bad_enum', 'unknown_handle', 'unrequested_pair',
        'quote_not_found', 'degenerate', 'unknown_subject', 'duplicate', 'truncated',
        'refusal', 'inconsistent', 'unsupported', 'unstorable',
        'uncited_answer', 'bad_abstention',
        'name_not_found', 'not_standalone', 'wrong_subject'));

ALTER TABLE answers DROP CONSTRAINT answers_reasons_check;
ALTER TABLE answers ADD CONSTRAINT answers_reasons_check
    CHECK (reasons <@ ARRAY['empty', 'too_large', 'not_json',
        'trailing_content', 'schema', 'unknown_field', 'bad_enum',
        'unknown_handle', 'unrequested_pair', 'quote_not_found',
        'degenerate', 'unknown_subject', 'duplicate', 'truncated',
        'refusal', 'inconsistent', 'unsupported', 'unstorable',
        'uncited_answer', 'bad_abstention',
        'name_not_found', 'not_standalone', 'wrong_subject']::text[]);
