-- A person's join: these two mentions are one thing, though no rule joins them (another
-- type, a nickname, a name the text never links). The counterpart of
-- `entity_separations`: re-resolution applies it, the rows it places say `person`, and
-- for one pair of mentions the later of a join and a separation holds. No model writes
-- here.
CREATE TABLE entity_joins (
    id          bigserial PRIMARY KEY,
    entity_id   bigint NOT NULL REFERENCES entities (id),
    joined_to   bigint NOT NULL REFERENCES entities (id),
    reviewer    text NOT NULL CHECK (length(btrim(reviewer)) > 0),
    reason      text NOT NULL CHECK (length(btrim(reason)) > 0),
    decided_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (entity_id <> joined_to)
);

ALTER TABLE entity_resolutions DROP CONSTRAINT entity_resolutions_rule_check;
ALTER TABLE entity_resolutions ADD CONSTRAINT entity_resolutions_rule_check
    CHECK (rule IN ('first', 'same_name', 'alias_in_text', 'short_name', 'person'));
