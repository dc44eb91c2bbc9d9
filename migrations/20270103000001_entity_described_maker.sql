-- Rules version 5.
--
-- For a work, who made it, as its own document says ("His David" in Donatello's summary,
-- "Michelangelo's David", the title "David (Michelangelo)"), read as the other parts of
-- `relata_validate::resolve::Described` are: `same_name` does not join two works of one
-- name by two makers. NULL where the document says none (most mentions).
ALTER TABLE entity_resolutions ADD COLUMN described_maker text;
