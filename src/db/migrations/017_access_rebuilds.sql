-- Whole-account rebuilds of the gateways' access lists (a security group's windows, a lock, a time zone or a
-- gateway's list secret changed): asked for in the change's transaction, made after it, a few thousand keys
-- per transaction (src/modules/access/rebuilds.ts), so a large account's change answers at once and never
-- holds its gateways' rows for the whole build. A new request while one runs starts it again from the first key.
CREATE TABLE access_rebuilds (
  account_id bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
  requested_at timestamptz NOT NULL,
  -- Counts the requests: a part built under an earlier one does not move the current one on.
  generation bigint NOT NULL DEFAULT 1,
  -- The keys up to this id are built under the current request.
  after_key_id bigint NOT NULL DEFAULT 0
);
