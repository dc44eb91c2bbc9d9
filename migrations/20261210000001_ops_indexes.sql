-- Indexes for the operations queries (relata report, relata backfill): rejections and
-- relations looked up by the model call that produced them, and classified pairs looked up
-- across task versions.
CREATE INDEX invalid_outputs_call_idx ON invalid_outputs (call_id);
CREATE INDEX claim_relations_call_idx ON claim_relations (call_id);
CREATE INDEX classified_pairs_pair_idx ON classified_pairs (claim_lo, claim_hi);
