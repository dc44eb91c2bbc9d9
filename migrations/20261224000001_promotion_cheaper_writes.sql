-- Every promotion decision writes one `evidence` row and one `promotions` row beside the
-- workers' commits, and on a saturated machine that work comes out of the workers'
-- throughput (BENCHMARKS.md §1b). Copying 80,000 decisions into tables shaped like
-- these, most of the time went to guards that cost more than what they guard:
--
-- * The three hashes were hex text under `~ '^[0-9a-f]{64}$'`: a regular expression run
--   three times per record (about half the insert), and a 64-byte key. They become
--   `bytea` of exactly 32 bytes: the type itself refuses anything but bytes, and the
--   record is 96 bytes shorter. relata still hashes and shows them as hex; the encoding
--   only changes at the table's edge, so every record's sha256 is unchanged.
-- * `UNIQUE (sha256)` guarded nothing the chain does not: a record's hash covers its
--   `seq`, which is the key, and `relata evidence verify` recomputes every hash.
-- * The foreign key from `promotions.evidence_seq` to `evidence` ran one look-up per
--   decision. Records cannot be deleted (the triggers), both rows are written in one
--   transaction, and `relata evidence verify` checks more than the key did: that each
--   promotion's record exists, is about the same candidate, is its latest and implies its
--   state.
-- * `promotions_state_idx (state, proposed_at)` served only listings of decided
--   candidates, which read the table once; the review queue keeps its own partial index.
--
-- ALTER TABLE's rewrite does not fire the row triggers: the log stays append-only.

ALTER TABLE evidence
    DROP CONSTRAINT evidence_candidate_sha256_check,
    DROP CONSTRAINT evidence_prev_sha256_check,
    DROP CONSTRAINT evidence_sha256_check,
    DROP CONSTRAINT evidence_sha256_key;

ALTER TABLE evidence
    ALTER COLUMN candidate_sha256 TYPE bytea USING decode(candidate_sha256, 'hex'),
    ALTER COLUMN prev_sha256 TYPE bytea USING decode(prev_sha256, 'hex'),
    ALTER COLUMN sha256 TYPE bytea USING decode(sha256, 'hex'),
    ADD CONSTRAINT evidence_candidate_sha256_check CHECK (octet_length(candidate_sha256) = 32),
    ADD CONSTRAINT evidence_prev_sha256_check CHECK (octet_length(prev_sha256) = 32),
    ADD CONSTRAINT evidence_sha256_check CHECK (octet_length(sha256) = 32);

ALTER TABLE evidence_head DROP CONSTRAINT evidence_head_sha256_check;
ALTER TABLE evidence_head
    ALTER COLUMN sha256 TYPE bytea USING decode(sha256, 'hex'),
    ADD CONSTRAINT evidence_head_sha256_check CHECK (octet_length(sha256) = 32);

ALTER TABLE promotions DROP CONSTRAINT promotions_evidence_seq_fkey;
DROP INDEX promotions_state_idx;
