-- Remote unlock commands.

CREATE TABLE lock_commands (
  id              uuid PRIMARY KEY,
  account_id      bigint NOT NULL REFERENCES accounts (id),
  lock_id         bigint NOT NULL REFERENCES locks (id),
  gateway_id      bigint NOT NULL REFERENCES gateways (id),
  api_key_id      bigint NOT NULL REFERENCES api_keys (id),
  status          text NOT NULL CHECK (status IN ('published', 'confirmed', 'timed_out', 'failed')),
  requested_at    timestamptz NOT NULL,
  published_at    timestamptz,
  confirmed_at    timestamptz,
  timeout_seconds integer NOT NULL,
  expires_at      timestamptz NOT NULL,
  error           jsonb
);
-- One command in flight per lock, whichever instance took the request: a second unlock gets the first.
CREATE UNIQUE INDEX lock_commands_in_flight ON lock_commands (lock_id) WHERE status = 'published';
CREATE INDEX lock_commands_due ON lock_commands (expires_at) WHERE status = 'published';
