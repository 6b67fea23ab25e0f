-- Access decisions (README "How a door decides"): credentials on keys, weekly windows on security groups,
-- time zones on locations, and each gateway's versioned access list.

-- An IANA time-zone name; null: the parent's (an account's root with none reads UTC).
ALTER TABLE locations ADD COLUMN time_zone text;
-- Weekly windows ([{days, start, end}]); null: at any time.
ALTER TABLE security_groups ADD COLUMN windows jsonb;
-- How long a gateway may decide from its copy of the access list without hearing from the service.
ALTER TABLE accounts ADD COLUMN offline_access_seconds integer NOT NULL DEFAULT 604800
  CHECK (offline_access_seconds BETWEEN 60 AND 7776000);

-- A key's credential (the number a card or fob presents, or a phone key's own), never in clear:
-- credential_hash is an HMAC under a server key (lookup and uniqueness), credential_box the credential
-- encrypted (the operator's view, and each gateway's HMAC of it).
ALTER TABLE keys ADD COLUMN credential_hash text;
ALTER TABLE keys ADD COLUMN credential_box text;
-- Unique among an account's live keys: a returned or revoked card's number can be given out again.
CREATE UNIQUE INDEX keys_credential ON keys (account_id, credential_hash)
  WHERE credential_hash IS NOT NULL AND revoked_at IS NULL AND state <> 'returned';
-- A returned card presented again is found without reading every key of the account (refused as no_access).
CREATE INDEX keys_returned_credential ON keys (account_id, credential_hash)
  WHERE credential_hash IS NOT NULL AND revoked_at IS NULL AND state = 'returned';

-- Each gateway's list: its HMAC secret (derived from its MQTT password when it is shown; encrypted), the
-- version of its list (bumped once per transaction that changes it: the row lock orders the versions the
-- way they commit), the version the gateway said it holds, the versions below which removals were
-- forgotten (a gateway older than that gets the whole list), and what it last said of its copy.
ALTER TABLE gateways ADD COLUMN access_secret_box text;
-- Lists start at version 1 (empty): a gateway that applied one has a version above 0, which means it keeps lists.
ALTER TABLE gateways ADD COLUMN access_list_version bigint NOT NULL DEFAULT 1;
ALTER TABLE gateways ADD COLUMN access_applied_version bigint NOT NULL DEFAULT 0;
ALTER TABLE gateways ADD COLUMN access_pruned_version bigint NOT NULL DEFAULT 0;
ALTER TABLE gateways ADD COLUMN access_list_expired boolean NOT NULL DEFAULT false;
-- With an external broker every instance receives a gateway's access/sync: the first to claim it answers.
ALTER TABLE gateways ADD COLUMN access_sync_claim text;
ALTER TABLE gateways ADD COLUMN access_sync_claimed_at timestamptz;

-- One entry per (gateway, key): what the gateway must know of the key, as the JSON sent to it (compared and
-- sent as it is); entry null is a removal kept until the gateway has applied it.
CREATE TABLE gateway_access_entries (
  gateway_id bigint NOT NULL REFERENCES gateways (id) ON DELETE CASCADE,
  key_id     bigint NOT NULL REFERENCES keys (id),
  version    bigint NOT NULL,
  entry      text,
  PRIMARY KEY (gateway_id, key_id)
);
CREATE INDEX gateway_access_entries_version ON gateway_access_entries (gateway_id, version);

-- A key change waits (`sent`) until every gateway it changed on has applied that version.
CREATE TABLE gateway_access_pending (
  key_id     bigint NOT NULL REFERENCES keys (id),
  gateway_id bigint NOT NULL REFERENCES gateways (id) ON DELETE CASCADE,
  version    bigint NOT NULL,
  PRIMARY KEY (key_id, gateway_id)
);
CREATE INDEX gateway_access_pending_gateway ON gateway_access_pending (gateway_id, version);
