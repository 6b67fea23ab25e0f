-- Secrets at rest (README: Security).

-- A queued message keeps what it will send (body and setup link) sealed under the server key while it
-- waits, and drops it once it is sent, finally fails or is withdrawn (its link replaced or cancelled).
ALTER TABLE outbound_messages ADD COLUMN sealed_content text;
ALTER TABLE outbound_messages DROP CONSTRAINT outbound_messages_status_check;
ALTER TABLE outbound_messages ADD CONSTRAINT outbound_messages_status_check
  CHECK (status IN ('pending', 'sent', 'failed', 'withdrawn'));
-- Messages already sent or failed kept their link in clear: cut it out of the body and drop it.
UPDATE outbound_messages
   SET body = CASE WHEN link = '' THEN body ELSE replace(body, link, '[setup link removed]') END, link = NULL
 WHERE status <> 'pending' AND link IS NOT NULL;

-- Idempotency records keep the stored response sealed under the server key (a POST /v1/webhooks answer
-- holds the signing secret). `body` only still holds responses stored before this migration, until they
-- expire (24 hours).
ALTER TABLE idempotency_keys ADD COLUMN sealed_body text;
