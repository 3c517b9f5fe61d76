-- Priorities and fair share in the claim (issue #9; README "Priority and fair share").
-- siwa.jobs.priority (0001) now means something: 0 is the most urgent, 9 the least. The claim
-- takes due items of more urgent jobs first and shares each batch fairly among the runnable jobs
-- of equal priority (ClaimShares in the source), reading one index range per job.

-- The scale, checked. Kinds' defaults (JobPriority.default(forKind:) in the source): sign-in 0,
-- notification-processing 2, ops-triggered jobs (sweeps, transfers, noop) 4, the nightly
-- refresh-validation 7. A job row inserted without a priority is taken as an ops job.
ALTER TABLE siwa.jobs ADD CONSTRAINT jobs_priority_range CHECK (priority BETWEEN 0 AND 9);
ALTER TABLE siwa.jobs ALTER COLUMN priority SET DEFAULT 4;

-- Jobs planned before this migration all hold the old default 1: give them their kind's default,
-- so a validation already running does not outrank the notifications planned after it.
UPDATE siwa.jobs
SET priority = CASE kind
                   WHEN 'sign-in' THEN 0
                   WHEN 'notification-processing' THEN 2
                   WHEN 'refresh-validation' THEN 7
                   ELSE 4
               END
WHERE priority = 1;

-- The claim reads each runnable job's oldest due items: (job_id, run_at, id) over available items
-- replaces the global (run_at, id) order of 0001. Like the index it replaces, it only gains an
-- entry when an item becomes available (planned, retried, released, rescued); claiming and
-- completing write none. Built in the migration's transaction: it holds writes to job_items for
-- as long as building it over the available items takes.
DROP INDEX siwa.job_items_claim;
CREATE INDEX job_items_claim_by_job ON siwa.job_items (job_id, run_at, id) WHERE state = 'available';
