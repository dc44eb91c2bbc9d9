-- Rules version 4.
--
-- For an event or a work, the year its own document dates the name by ("the 1856 Treaty
-- of Paris"), read as the other parts of `relata_validate::resolve::Described` are:
-- `same_name` does not join two mentions dated by two years. NULL where the document
-- dates it by none (most mentions).
ALTER TABLE entity_resolutions ADD COLUMN described_year text;

-- `kind_name`: "Amazon River" joins the one established "Amazon" its documents call a
-- river.
ALTER TABLE entity_resolutions DROP CONSTRAINT entity_resolutions_rule_check;
ALTER TABLE entity_resolutions ADD CONSTRAINT entity_resolutions_rule_check
    CHECK (rule IN ('first', 'same_name', 'alias_in_text', 'short_name', 'kind_name',
                    'person'));
