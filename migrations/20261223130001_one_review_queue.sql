-- One review queue: promotion's. A row with a warning is a candidate the policy holds for
-- a named reviewer (`relata review`), whose decision is evidence; the warnings table's own
-- "reviewed" marks, which nothing promoted or exported and anyone could set, go.
DROP INDEX warnings_review_idx;
ALTER TABLE warnings DROP COLUMN reviewed_at, DROP COLUMN reviewed_by;
