-- The access log only grows at its end: ids are drawn at insert, and GET /v1/events pages in id order. An
-- instance's cached page that is full (it has a next page) can only change when an event with an id at or
-- below its last one is committed (transactions commit out of id order) or when entries are deleted. So
-- inserts say more than which accounts changed: per account, the least id inserted ("account:least id",
-- comma-separated), and each instance drops only the pages such an id can join (PageCache.appended).
-- Deletions keep migration 014's payload (the accounts: every page of theirs goes); more than 50 accounts
-- in one statement send an empty payload (every page of every account), as before.
CREATE FUNCTION access_log_appended() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  firsts text[] := (SELECT array_agg(account_id || ':' || least_id) FROM (SELECT account_id, min(id) AS least_id FROM changed GROUP BY account_id) AS a);
BEGIN
  IF firsts IS NOT NULL THEN
    PERFORM pg_notify('latchkey_' || current_schema() || '_access_log_changed',
                      CASE WHEN cardinality(firsts) > 50 THEN '' ELSE array_to_string(firsts, ',') END);
  END IF;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  RETURN NULL;
END $$;

DROP TRIGGER access_events_inserted ON access_events;
CREATE TRIGGER access_events_inserted AFTER INSERT ON access_events
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION access_log_appended();
