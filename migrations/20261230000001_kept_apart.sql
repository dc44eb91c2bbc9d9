-- Whether entity resolution now keeps the subjects of two claims apart: both claims'
-- mentions are resolved, to different canonical entities. A relation between them was
-- made while they were one thing (or by name); once a person separates them (or a rule
-- change splits them), answers no longer serve it as a contradiction. Claims without a
-- resolved mention (paired by subject name, or not resolved yet) are not kept apart.
CREATE FUNCTION relata_kept_apart(claim_a bigint, claim_b bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1
          FROM claims ca
          JOIN entity_resolutions ra ON ra.entity_id = ca.entity_id
          JOIN claims cb ON cb.id = claim_b
          JOIN entity_resolutions rb ON rb.entity_id = cb.entity_id
         WHERE ca.id = claim_a
           AND ra.canonical_id <> rb.canonical_id)
$$;
