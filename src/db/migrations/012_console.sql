-- The operator console (docs/console.md): server-side sessions, the API key each session uses per account,
-- and the NOTIFYs that feed its live updates.

-- A signed-in browser. Only the hash of the cookie's token is stored; the operator token the session acts
-- with is sealed with the server key (never in clear at rest).
CREATE TABLE console_sessions (
  token_hash            text PRIMARY KEY,
  operator_token_sealed text NOT NULL,
  created_at            timestamptz NOT NULL,
  last_seen_at          timestamptz NOT NULL,
  expires_at            timestamptz NOT NULL
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);

-- The public API key a session acts with in one account (made through the operator API, sealed here,
-- revoked at sign-out, expiring with the session in any case).
CREATE TABLE console_session_keys (
  session_hash  text NOT NULL REFERENCES console_sessions (token_hash) ON DELETE CASCADE,
  account_id    bigint NOT NULL REFERENCES accounts (id),
  api_key_id    bigint NOT NULL REFERENCES api_keys (id),
  token_sealed  text NOT NULL,
  PRIMARY KEY (session_hash, account_id)
);

-- Live updates: one NOTIFY per statement and account on the channel latchkey_{schema}_console_live
-- (Database.listen's naming), whichever instance or job wrote the rows. Many accounts in one statement
-- make one notification for all (account_id null). The functions keep the schema they were made in
-- (SET search_path FROM CURRENT): a session with another search_path (a script, a restore) writing these
-- tables must find the same tables and notify the same channel.
CREATE FUNCTION console_live_send(topic text, account_ids bigint[]) RETURNS void LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  channel text := 'latchkey_' || current_schema() || '_console_live';
  account bigint;
BEGIN
  IF account_ids IS NULL OR cardinality(account_ids) = 0 THEN
    RETURN;
  END IF;
  IF cardinality(account_ids) > 20 THEN
    PERFORM pg_notify(channel, json_build_object('topic', topic, 'account_id', NULL)::text);
    RETURN;
  END IF;
  FOREACH account IN ARRAY account_ids LOOP
    PERFORM pg_notify(channel, json_build_object('topic', topic, 'account_id', account)::text);
  END LOOP;
END $$;

-- Rows that carry their account: the access log and domain events.
CREATE FUNCTION console_live_by_account() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM console_live_send(TG_ARGV[0], (SELECT array_agg(DISTINCT account_id) FROM changed));
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  RETURN NULL; -- a live update is a hint; the write it follows must never fail because of it
END $$;

CREATE TRIGGER access_events_console_live AFTER INSERT ON access_events
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION console_live_by_account('events');
CREATE TRIGGER domain_events_console_live AFTER INSERT ON domain_events
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION console_live_by_account('events');

-- Gateways going online or offline (a heartbeat that changes nothing stays quiet).
CREATE FUNCTION console_live_presence() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM console_live_send('presence', (
    SELECT array_agg(DISTINCT l.account_id)
      FROM changed n JOIN old_rows o ON o.id = n.id JOIN locations l ON l.id = n.location_id
     WHERE n.online IS DISTINCT FROM o.online));
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  RETURN NULL; -- a live update is a hint; the write it follows must never fail because of it
END $$;

CREATE TRIGGER gateways_console_live AFTER UPDATE ON gateways
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION console_live_presence();

-- Subscriptions (status, failing_since) and their deliveries.
CREATE FUNCTION console_live_subscriptions() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM console_live_send('webhooks', (
    SELECT array_agg(DISTINCT l.account_id) FROM changed s JOIN locations l ON l.id = s.location_id));
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  RETURN NULL; -- a live update is a hint; the write it follows must never fail because of it
END $$;

CREATE TRIGGER webhook_subscriptions_console_live_insert AFTER INSERT ON webhook_subscriptions
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION console_live_subscriptions();
CREATE TRIGGER webhook_subscriptions_console_live_update AFTER UPDATE ON webhook_subscriptions
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION console_live_subscriptions();

CREATE FUNCTION console_live_deliveries() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM console_live_send('webhooks', (
    SELECT array_agg(DISTINCT l.account_id)
      FROM changed d JOIN webhook_subscriptions s ON s.id = d.subscription_id JOIN locations l ON l.id = s.location_id));
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  RETURN NULL; -- a live update is a hint; the write it follows must never fail because of it
END $$;

CREATE TRIGGER webhook_deliveries_console_live_insert AFTER INSERT ON webhook_deliveries
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION console_live_deliveries();
CREATE TRIGGER webhook_deliveries_console_live_update AFTER UPDATE ON webhook_deliveries
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION console_live_deliveries();
