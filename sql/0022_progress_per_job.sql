-- job_progress counts each job's items and results apart, one aggregate per job, instead of
-- joining every item to its result.
--
-- The join was planned from the partitions' statistics, and a job's partition has none while the
-- job runs (autovacuum analyzes it a minute or more later): taking the items for one row, the
-- planner looked results up by (job_id, outcome) and filtered on item_id, so reading the progress
-- of a 40,000-item job right after its drain took 250 s of CPU (40,000 × 40,000 rows; issue #12).
-- Two aggregates over the job's own rows are linear whatever the statistics say. Same columns,
-- same meaning (every result has its item).
CREATE OR REPLACE VIEW siwa.job_progress AS
SELECT j.id                  AS job_id,
       j.kind,
       j.state               AS job_state,
       j.paused_reason,
       j.created_at,
       j.finished_at,
       j.item_count,
       i.items,
       i.available,
       i.running,
       i.succeeded,
       i.failed,
       i.discarded,
       i.terminal,
       r.valid,
       r.invalid,
       i.retried,
       r.first_result_at,
       r.last_result_at
FROM siwa.jobs j
CROSS JOIN LATERAL (
    SELECT count(*)                                          AS items,
           count(*) FILTER (WHERE state = 'available')       AS available,
           count(*) FILTER (WHERE state = 'running')         AS running,
           count(*) FILTER (WHERE state = 'succeeded')       AS succeeded,
           count(*) FILTER (WHERE state = 'failed')          AS failed,
           count(*) FILTER (WHERE state = 'discarded')       AS discarded,
           count(*) FILTER (WHERE state IN ('succeeded', 'failed', 'discarded', 'cancelled')) AS terminal,
           count(*) FILTER (WHERE attempt > 1)               AS retried
    FROM siwa.job_items WHERE job_id = j.id) i
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE outcome = 'valid')         AS valid,
           count(*) FILTER (WHERE outcome = 'invalid')       AS invalid,
           min(created_at)                                   AS first_result_at,
           max(created_at)                                   AS last_result_at
    FROM siwa.results WHERE job_id = j.id) r;
