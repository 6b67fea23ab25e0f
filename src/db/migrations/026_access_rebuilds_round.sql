-- A new request while a whole-account rebuild runs no longer starts it over from the first key (changes asked
-- faster than a rebuild takes would starve it): it goes on to the last key and round again up to where the request
-- found it (src/modules/access/rebuild-progress.ts).
--
-- after_key_id is renamed, not kept: the previous version's instances, still running during a rolling deploy, read
-- and write the row their way (a request starting over, a part deleting the row at the last key), which beside
-- this version's rounds would end a rebuild with keys built from rules older than the last request: a door's
-- offline list granting what a change took away. Renamed, their statements fail instead (their account-wide
-- changes answer 500 until they are replaced; README "Deploying"), and nothing is left stale.
ALTER TABLE access_rebuilds RENAME COLUMN after_key_id TO last_built_key_id;
ALTER TABLE access_rebuilds
  ADD COLUMN round_until_key_id bigint NOT NULL DEFAULT 0,
  ADD COLUMN wrapped boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN access_rebuilds.last_built_key_id IS 'the last key built; the next part starts after it';
COMMENT ON COLUMN access_rebuilds.round_until_key_id IS 'once wrapped, the round ends at this key (built before the last request); 0: no round';
COMMENT ON COLUMN access_rebuilds.wrapped IS 'past the last key, on the way round to round_until_key_id';
