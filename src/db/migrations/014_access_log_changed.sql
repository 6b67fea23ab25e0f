-- The access log tells every instance which accounts' entries changed (inserted by any writer, removed by
-- the retention job or by hand): each instance keeps GET /v1/events pages in memory per account and drops
-- them on this notification. One NOTIFY per statement on latchkey_{schema}_access_log_changed (Database.listen's
-- naming), its payload the accounts' ids comma-separated, or empty (every account) when a statement touches
-- more than 50. Like the console's, the function keeps its schema, and it never fails the write it follows
-- (the pages' short TTL covers a notification that could not be sent).
CREATE FUNCTION access_log_changed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  accounts bigint[] := (SELECT array_agg(DISTINCT account_id) FROM changed);
BEGIN
  IF accounts IS NOT NULL THEN
    PERFORM pg_notify('latchkey_' || current_schema() || '_access_log_changed',
                      CASE WHEN cardinality(accounts) > 50 THEN '' ELSE array_to_string(accounts, ',') END);
  END IF;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  RETURN NULL;
END $$;

CREATE TRIGGER access_events_inserted AFTER INSERT ON access_events
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION access_log_changed();
CREATE TRIGGER access_events_deleted AFTER DELETE ON access_events
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION access_log_changed();
