-- People deleted lately, for the sweep that purges again what a transaction committing beside the deletion wrote
-- with their data (src/modules/webhooks/person-data.ts): a few rows at most, read every minute.
CREATE INDEX people_deleted ON people (deleted_at) WHERE deleted_at IS NOT NULL;
