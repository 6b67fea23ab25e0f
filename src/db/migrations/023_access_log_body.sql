-- The access log keeps each new Event as the JSON text the service wrote (body), not as jsonb (data): every page
-- of GET /v1/events sends the stored Events as they are, and PostgreSQL's writing of jsonb out as text was about a
-- third of a page's statement (50 doors' pages at their tails: 13.9 against 9.4 ms; the first page of 50: 1.03
-- against 0.86 ms; bench/RESULTS.md, 2026-11-29). Rows written before keep their data, read the same way (reads
-- take body, else data's text): no rewrite of a log that may hold millions of rows. A row holds one or the other.
ALTER TABLE access_events ADD COLUMN body text;
ALTER TABLE access_events ALTER COLUMN data DROP NOT NULL;
ALTER TABLE access_events ADD CONSTRAINT access_events_payload CHECK ((body IS NULL) <> (data IS NULL)) NOT VALID;
-- Read whole and never filtered on, as data (migration 021).
ALTER TABLE access_events ALTER COLUMN body SET STATISTICS 0;
