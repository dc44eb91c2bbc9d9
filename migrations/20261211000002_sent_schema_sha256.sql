-- The sha256 of the exact JSON Schema sent with a call. From `extract-p2` on it can be
-- tighter than the contract named by schema_id/version/sha256 (quotes held to the chunk's
-- own sentences), and it differs per chunk; null when the dialect sends no schema and for
-- calls recorded before this column existed.
ALTER TABLE model_calls ADD COLUMN sent_schema_sha256 text
    CHECK (sent_schema_sha256 ~ '^[0-9a-f]{64}$');
