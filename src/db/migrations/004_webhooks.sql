-- Webhook subscriptions and their deliveries.

CREATE TABLE webhook_subscriptions (
  id                uuid PRIMARY KEY,
  account_id        bigint NOT NULL REFERENCES accounts (id),
  location_id       bigint NOT NULL REFERENCES locations (id),
  url               text NOT NULL,
  events            text[] NOT NULL,
  description       text NOT NULL DEFAULT '',
  status            text NOT NULL CHECK (status IN ('active', 'paused')),
  secret_ciphertext text NOT NULL, -- AES-256-GCM under the server's webhook key
  failing_since     timestamptz,
  last_delivery_at  timestamptz,
  created_by_key_id bigint REFERENCES api_keys (id),
  created_at        timestamptz NOT NULL
);
CREATE INDEX webhook_subscriptions_location ON webhook_subscriptions (location_id) WHERE status = 'active';

CREATE TABLE webhook_deliveries (
  id              uuid PRIMARY KEY,
  subscription_id uuid NOT NULL REFERENCES webhook_subscriptions (id),
  event_type      text NOT NULL,
  event_id        text NOT NULL,
  person_id       uuid,  -- whose data the payload carries, so deleting the person purges it
  payload         jsonb, -- null once purged
  status          text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'exhausted')),
  attempt         integer NOT NULL DEFAULT 0,
  response_status integer,
  last_error      text,
  next_attempt_at timestamptz,
  claimed_until   timestamptz,
  delivered_at    timestamptz,
  created_at      timestamptz NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries (subscription_id, id);
CREATE INDEX webhook_deliveries_person ON webhook_deliveries (person_id) WHERE person_id IS NOT NULL;
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at) WHERE payload IS NOT NULL;
