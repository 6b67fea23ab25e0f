-- The dispatcher looks for active subscriptions whose failure streak reached 24 hours on every run
-- (auto-pause is a rule of time): only failing active subscriptions are in this index.
CREATE INDEX webhook_subscriptions_failing ON webhook_subscriptions (failing_since) WHERE status = 'active' AND failing_since IS NOT NULL;
