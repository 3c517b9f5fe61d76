-- The queue's retry time budget (issue #8): when an item's first charged attempt started, so a
-- transient failure discards it only once it has used max_attempts AND that first attempt is
-- older than the worker's retry budget. Set by the claim (COALESCE: only the first one), cleared
-- when an uncharged release gives back the item's only attempt. NULL for items never attempted,
-- and for items claimed before this migration until their next claim.
ALTER TABLE siwa.job_items ADD COLUMN first_attempt_at timestamptz;
