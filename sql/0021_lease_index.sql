-- The leased-items index no longer matches `state = 'running'`.
--
-- Completions and lease renewals find their rows by primary key (item id, job id) and also say
-- `state = 'running'`. While the leased index was partial on that predicate, the planner took it
-- for those statements: a bitmap scan over every running item of the partition (and the dead
-- index entries left by earlier leases), then a nested loop rescanning the batch for each row,
-- quadratic in the batch size (5 ms for 35 completions, issue #12). Keyed on the lease itself,
-- the index serves only what needs it: the rescue of expired leases (`lease_expires_at < now()`
-- implies the predicate). Every running item has a lease; a completion clears it.
DROP INDEX siwa.job_items_leased;
CREATE INDEX job_items_leased ON siwa.job_items (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
