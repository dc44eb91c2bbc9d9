-- Whether a model call record is complete provenance for a candidate: it exists and names
-- the model, the prompt version and the schema (id and sha256; the version is NOT NULL).
-- One definition for every kind of candidate the promoter judges. Takes the (possibly
-- null-extended) row of a LEFT JOIN: a missing call is not provenance.
CREATE FUNCTION relata_provenance_complete(m model_calls) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT m.id IS NOT NULL AND m.model <> '' AND m.prompt_version <> ''
           AND m.schema_id <> '' AND m.schema_sha256 <> ''
$$;
