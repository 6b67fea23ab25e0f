-- A UHPPOTE board that left a card write unanswered while it still answers polls (lost packets, a busy board) was
-- written again only at the work queue's next rung (1 min, then 5, 30 …): a revoked card kept opening its doors
-- meanwhile. The time of the write it missed is kept here; the next poll it answers writes again at once and clears it.
ALTER TABLE uhppote_controllers ADD COLUMN missed_write_at timestamptz;
COMMENT ON COLUMN uhppote_controllers.missed_write_at IS 'a card write this board did not answer; cleared when the waiting writes are tried again on its next answered poll';
