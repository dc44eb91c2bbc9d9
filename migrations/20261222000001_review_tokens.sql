-- Sign-in tokens of the review page. One live token per reviewer: issuing a new one
-- replaces the row, so the old token stops working at once. Only the token's sha256 is
-- kept; the token itself is shown once, by `relata review token`, and never stored.
CREATE TABLE review_tokens (
    reviewer     text PRIMARY KEY CHECK (char_length(reviewer) BETWEEN 1 AND 200),
    token_sha256 text NOT NULL UNIQUE CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
    issued_at    timestamptz NOT NULL DEFAULT now()
);
