-- A new request while a whole-account rebuild runs no longer starts it over from the first key (changes asked
-- faster than a rebuild takes would starve it): it goes on to the last key and round again up to where the request
-- found it (src/modules/access/rebuild-progress.ts).
ALTER TABLE access_rebuilds
  ADD COLUMN until_key_id bigint NOT NULL DEFAULT 0,
  ADD COLUMN wrapped boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN access_rebuilds.after_key_id IS 'the last key built; the next part starts after it';
COMMENT ON COLUMN access_rebuilds.until_key_id IS 'once wrapped, the round ends at this key (built before the last request); 0: no round';
COMMENT ON COLUMN access_rebuilds.wrapped IS 'past the last key, on the way round to until_key_id';
