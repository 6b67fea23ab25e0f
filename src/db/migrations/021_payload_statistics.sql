-- The Event payloads of the access log and the outbox are read whole and never filtered on, so the planner has
-- no use for their statistics; ANALYZE sorted a sample of 30,000 of them to make some (jsonb comparisons). On the
-- embedded database, where ANALYZE holds the service's one thread, the outbox's took 189 ms of a 60,000-event
-- site and 52 ms without (bench/RESULTS.md, 2026-11-28); autovacuum's ANALYZE on server PostgreSQL saves the same.
ALTER TABLE access_events ALTER COLUMN data SET STATISTICS 0;
ALTER TABLE domain_events ALTER COLUMN data SET STATISTICS 0;
