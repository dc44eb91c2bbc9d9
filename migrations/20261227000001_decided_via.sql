-- How a person's decision was made, on its evidence record beside the reviewer's name:
-- `review_page` (the signed-in reviewer) or `command_line` (`relata review approve|reject`,
-- with the operating-system user and host it ran as beside `--by`, which anyone at a
-- shell may type). The policy's records say nothing here: the rule that decided is the
-- actor.
--
-- The record's sha256 covers these columns only when `via` is set (relata-store's
-- `EvidenceRecord::compute_sha256`), so every record written before this migration keeps
-- the hash it was given and the chain verifies unchanged.
--
-- ADD COLUMN without a default does not rewrite the table, and ALTER TABLE does not fire
-- the row triggers: the log stays append-only.

ALTER TABLE evidence
    ADD COLUMN via         text,
    ADD COLUMN via_os_user text,
    ADD COLUMN via_host    text,
    ADD CONSTRAINT evidence_via_check CHECK (via IN ('review_page', 'command_line')),
    ADD CONSTRAINT evidence_via_reviewer_check CHECK (via IS NULL OR actor_kind = 'reviewer'),
    ADD CONSTRAINT evidence_via_shell_check CHECK (
        (via = 'command_line') = (via_os_user IS NOT NULL AND via_host IS NOT NULL)
        AND (via IS NOT NULL OR (via_os_user IS NULL AND via_host IS NULL))
    );
