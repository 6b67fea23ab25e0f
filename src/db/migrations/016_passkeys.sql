-- Phone keys bound to the holder's device by a passkey (README "The key holder's page").

-- WebAuthn challenges: single use (deleted when checked), 60 s, in the database so that any instance checks
-- them. purpose: 'register' (subject: the setup link's token hash) or 'assert' (subject null: discoverable).
CREATE TABLE passkey_challenges (
  challenge  text PRIMARY KEY,
  purpose    text NOT NULL CHECK (purpose IN ('register', 'assert')),
  subject    text,
  expires_at timestamptz NOT NULL
);
CREATE INDEX passkey_challenges_expiry ON passkey_challenges (expires_at);

-- A passkey registered for a phone key: its credential id, COSE public key and sign counter.
CREATE TABLE passkeys (
  id            bigserial PRIMARY KEY,
  key_id        bigint NOT NULL REFERENCES keys (id),
  credential_id text NOT NULL UNIQUE,
  public_key    text NOT NULL,
  sign_count    bigint NOT NULL DEFAULT 0,
  created_at    timestamptz NOT NULL,
  last_used_at  timestamptz
);
CREATE INDEX passkeys_key ON passkeys (key_id);

-- An unlock asked for by a key holder (not an API key): the command names the key.
ALTER TABLE lock_commands ALTER COLUMN api_key_id DROP NOT NULL;
ALTER TABLE lock_commands ADD COLUMN key_id bigint REFERENCES keys (id);
