-- The access log and the outbox are written once per door event, in batches of hundreds a second. Each of
-- their foreign keys is a trigger run per row (a SELECT … FOR KEY SHARE on the parent): on a batch of 64 door
-- events the five below took about as long as the inserts and their indexes together (EXPLAIN ANALYZE,
-- bench/RESULTS.md). They guarded nothing that can happen: no code deletes an account, a location or a lock,
-- and the writers take each row's account, location and lock from the lock they read in the same write
-- (AccessLogWriter's batch context, the domain event's own row). The gateway's key stays: gateways are deleted
-- (operator API, controllers), and it is what keeps one with history from going.
-- Whoever adds the deletion of an account, a location or a lock decides there what becomes of its log.
ALTER TABLE access_events
  DROP CONSTRAINT access_events_account_id_fkey,
  DROP CONSTRAINT access_events_location_id_fkey,
  DROP CONSTRAINT access_events_lock_id_fkey;
ALTER TABLE domain_events
  DROP CONSTRAINT domain_events_account_id_fkey,
  DROP CONSTRAINT domain_events_location_id_fkey;
