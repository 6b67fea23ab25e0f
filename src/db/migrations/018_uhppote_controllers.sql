-- UHPPOTE access controllers (README "Real controllers"): boards that hold their own card list and decide at
-- the door, an account's external locking system. A controller is a gateway of kind 'uhppote': its locks hang
-- off it as off any gateway (presence, remote unlock, door events once per (gateway, event id) all shared),
-- but it has no MQTT account: it is reached over UDP (or TCP) by serial number and address.
ALTER TABLE accounts DROP CONSTRAINT accounts_locking_system_check;
ALTER TABLE accounts ADD CONSTRAINT accounts_locking_system_check CHECK (locking_system IN ('sandbox', 'uhppote'));

ALTER TABLE gateways ADD COLUMN kind text NOT NULL DEFAULT 'mqtt' CHECK (kind IN ('mqtt', 'uhppote'));
ALTER TABLE gateways ALTER COLUMN mqtt_username DROP NOT NULL;
ALTER TABLE gateways ALTER COLUMN password_hash DROP NOT NULL;
ALTER TABLE gateways ADD CONSTRAINT gateways_mqtt_credentials
  CHECK ((kind = 'mqtt') = (mqtt_username IS NOT NULL AND password_hash IS NOT NULL));

CREATE TABLE uhppote_controllers (
  gateway_id       bigint PRIMARY KEY REFERENCES gateways (id) ON DELETE CASCADE,
  serial_number    bigint NOT NULL UNIQUE CHECK (serial_number BETWEEN 1 AND 4294967295),
  host             text NOT NULL,
  port             integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
  transport        text NOT NULL CHECK (transport IN ('udp', 'tcp')),
  doors            smallint NOT NULL CHECK (doors IN (1, 2, 4)),
  -- The last event index read into the access log: events after it are fetched after a gap. NULL until the
  -- first contact, which starts the log at the board's latest event (its older history is not imported).
  last_event_index bigint,
  -- When the controller's clock, card list and listener were last brought in line (null: never).
  clock_set_at     timestamptz,
  listener_set_at  timestamptz,
  reconciled_at    timestamptz,
  -- The last reconciliation: what was added, changed or removed and why (JSON, no card numbers in clear).
  last_reconciliation jsonb,
  last_error       text,
  -- Lease of the instance polling it, so that one instance at a time talks to a board.
  polled_until     timestamptz
);

-- Which door of a controller a lock is (1..4); the lock's gateway_id names the controller.
CREATE TABLE uhppote_doors (
  lock_id    bigint PRIMARY KEY REFERENCES locks (id) ON DELETE CASCADE,
  gateway_id bigint NOT NULL REFERENCES uhppote_controllers (gateway_id) ON DELETE CASCADE,
  door       smallint NOT NULL CHECK (door BETWEEN 1 AND 4),
  UNIQUE (gateway_id, door)
);

-- The time profiles written to a controller: one per distinct weekly schedule (and its link), ids 2..254.
CREATE TABLE uhppote_time_profiles (
  gateway_id bigint NOT NULL REFERENCES uhppote_controllers (gateway_id) ON DELETE CASCADE,
  profile_id smallint NOT NULL CHECK (profile_id BETWEEN 2 AND 254),
  definition text NOT NULL,
  PRIMARY KEY (gateway_id, profile_id),
  UNIQUE (gateway_id, definition)
);

-- The card record last confirmed on each controller for a key (what a revocation must delete, what
-- reconciliation compares): the card number sealed, its lookup digest to match a card the board reports.
CREATE TABLE uhppote_cards (
  gateway_id   bigint NOT NULL REFERENCES uhppote_controllers (gateway_id) ON DELETE CASCADE,
  key_id       bigint NOT NULL REFERENCES keys (id) ON DELETE CASCADE,
  card_digest  text NOT NULL,
  card_box     text NOT NULL,
  record       text NOT NULL,
  written_at   timestamptz NOT NULL,
  PRIMARY KEY (gateway_id, key_id),
  UNIQUE (gateway_id, card_digest)
);
