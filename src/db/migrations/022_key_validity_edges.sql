-- The cards of an external locking system go on at their key's starts_at and come off at its expires_at: a job
-- asks every 15 s which keys have an edge in the last moments (controllers/store.ts, keysWithValidityEdge). Without
-- an index that read every key of every account, 86 ms of a 111,000-key embedded site each time, holding the
-- service's one thread (bench/RESULTS.md, 2026-11-28); with these two it reads only the keys at an edge.
CREATE INDEX keys_starts_at ON keys (starts_at) WHERE credential_box IS NOT NULL;
CREATE INDEX keys_expires_at ON keys (expires_at) WHERE credential_box IS NOT NULL AND expires_at IS NOT NULL;
