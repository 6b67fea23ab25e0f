-- Tables whose rows the list endpoints show tell every instance which accounts' rows changed: each instance
-- keeps pages of GET /v1/events, /v1/people and /v1/keys in memory per account and drops them on these
-- notifications, whoever wrote (an instance, a job, the retention job, a script). One NOTIFY per statement
-- on latchkey_{schema}_{channel} (Database.listen's naming), its payload the accounts' ids comma-separated,
-- or empty (every account) when a statement touches more than 50. Like the console's, the function keeps
-- its schema, and it never fails the write it follows (the pages' TTL covers a notification not sent).
CREATE FUNCTION list_rows_changed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  accounts bigint[] := (SELECT array_agg(DISTINCT account_id) FROM changed);
BEGIN
  IF accounts IS NOT NULL THEN
    PERFORM pg_notify('latchkey_' || current_schema() || '_' || TG_ARGV[0],
                      CASE WHEN cardinality(accounts) > 50 THEN '' ELSE array_to_string(accounts, ',') END);
  END IF;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  RETURN NULL;
END $$;

-- A trigger with transition tables takes one kind of statement: one trigger per kind.
CREATE TRIGGER access_events_inserted AFTER INSERT ON access_events
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION list_rows_changed('access_log_changed');
CREATE TRIGGER access_events_deleted AFTER DELETE ON access_events
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION list_rows_changed('access_log_changed');

CREATE TRIGGER people_inserted AFTER INSERT ON people
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION list_rows_changed('people_changed');
CREATE TRIGGER people_updated AFTER UPDATE ON people
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION list_rows_changed('people_changed');
CREATE TRIGGER people_deleted AFTER DELETE ON people
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION list_rows_changed('people_changed');

CREATE TRIGGER keys_inserted AFTER INSERT ON keys
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION list_rows_changed('keys_changed');
CREATE TRIGGER keys_updated AFTER UPDATE ON keys
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION list_rows_changed('keys_changed');
CREATE TRIGGER keys_deleted AFTER DELETE ON keys
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION list_rows_changed('keys_changed');
