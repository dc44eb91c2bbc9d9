-- Entity resolution: which stored mentions (rows of `entities`) name one thing.
--
-- A mention resolves to a canonical entity, named by the id of the cluster's first
-- mention (its smallest `entities.id`), so an id stays the same as mentions arrive and a
-- split keeps the older half's id. Each row says why the mention joined: the rule, the
-- mention it joined through and, where the text gives the join ("X (Y)", "X, also known
-- as Y"), the revision bytes that give it. Nothing here is written by a model; the rows
-- are recomputed from `entities`, the revisions' text and `entity_separations` by
-- `relata entities resolve` (and beside commits), so a rule change is a backfill.
CREATE TABLE entity_resolutions (
    entity_id        bigint PRIMARY KEY REFERENCES entities (id),
    canonical_id     bigint NOT NULL REFERENCES entities (id),
    -- `first`: the cluster's first mention; the others name the rule that joined them.
    rule             text NOT NULL CHECK (rule IN ('first', 'same_name', 'alias_in_text',
                        'short_name')),
    joined_to        bigint REFERENCES entities (id),
    evidence_revision_id bigint REFERENCES document_revisions (id),
    evidence_start   integer CHECK (evidence_start >= 0),
    evidence_end     integer,
    evidence_quote   text,
    name_key         text NOT NULL,
    -- The mention's own type, kept here so that the first mention of a name and type is
    -- one index probe.
    entity_type      text NOT NULL CHECK (entity_type IN ('person', 'organization',
                        'location', 'event', 'work', 'concept', 'other')),
    rules_version    integer NOT NULL,
    resolved_at      timestamptz NOT NULL DEFAULT now(),
    CHECK ((rule = 'first') = (joined_to IS NULL)),
    CHECK ((rule = 'first') = (canonical_id = entity_id)),
    CHECK ((evidence_start IS NULL) = (evidence_quote IS NULL)
           AND (evidence_start IS NULL) = (evidence_end IS NULL)
           AND (evidence_start IS NULL) = (evidence_revision_id IS NULL)),
    CHECK (evidence_end IS NULL OR evidence_end > evidence_start)
);
CREATE INDEX entity_resolutions_canonical_idx ON entity_resolutions (canonical_id);
-- What a new mention can join beside a commit: its revision's mentions and the first
-- resolved mention of its name and type.
CREATE INDEX entity_resolutions_name_key_idx
    ON entity_resolutions (name_key, entity_type, entity_id);
CREATE INDEX entities_revision_idx ON entities (revision_id);

-- A person's undo: these two mentions are not one thing. No rule joins them directly
-- again, and re-resolution moves the claims of the one that was joined back to their own
-- entity; no entity, claim or evidence row is removed.
CREATE TABLE entity_separations (
    id          bigserial PRIMARY KEY,
    entity_id   bigint NOT NULL REFERENCES entities (id),
    apart_from  bigint NOT NULL REFERENCES entities (id),
    reviewer    text NOT NULL CHECK (length(btrim(reviewer)) > 0),
    reason      text NOT NULL CHECK (length(btrim(reason)) > 0),
    decided_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (entity_id <> apart_from)
);

-- Pairing follows the canonical entity: a claim's partners are found through its entity.
CREATE INDEX claims_entity_idx ON claims (entity_id) WHERE entity_id IS NOT NULL;
