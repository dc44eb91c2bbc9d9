-- What a mention's own document describes its name as (`relata_validate::resolve::
-- Described`): a title that qualifies the name ("Jin dynasty (266–420)"), the longer name
-- a one-word name stands for there ("BP" for "Before Present", "Lee" in "Bruce Lee"), the
-- kind of place the text calls it ("the state of Georgia"). `same_name` does not join two
-- mentions whose documents describe them as two things. Kept with the mention so that the
-- step beside the commits compares a new mention with an entity's mentions without
-- reading their documents again. NULL where the document says nothing (most mentions).
ALTER TABLE entity_resolutions
    ADD COLUMN described_title  text,
    ADD COLUMN described_longer text,
    ADD COLUMN described_kind   text;
