-- Succeeded range items keep their row (issue #12: PostgreSQL's CPU per item). See README
-- "Succeeded range items keep their row".
--
-- A kind that opts in (`KindWrites.keepsSucceededRangeItems`: the refresh validation) no longer
-- rewrites an item claimed by range when it succeeds with a result: the row stays as planned
-- (available, not singly, attempt 0, at or below its job's claim cursor) and its result row,
-- marked `kept`, is the record that it ended. The row's update was about a fifth of the
-- completion statement's execution and one WAL record per item.
--
-- What reads item states knows it:
-- * a range lease counts its kept items (`item_leases.kept`, below), so its unfinished items are
--   those still available and not singly, less that count (`ItemCounts`); the rescue hands back
--   only items without a result row;
-- * `job_progress` and `summarize_job` count kept results as succeeded items, not running ones;
-- * `job retry` picks failed and discarded items only, never a kept (succeeded) one; `cancel`
--   touches items past the cursor only.
-- Results written before this migration read `kept` false, as their items were written.
ALTER TABLE siwa.results ADD COLUMN kept boolean NOT NULL DEFAULT false;
ALTER TABLE siwa.result_history ADD COLUMN kept boolean NOT NULL DEFAULT false;

CREATE OR REPLACE VIEW siwa.job_progress AS
SELECT j.id                      AS job_id,
       j.kind,
       j.state                   AS job_state,
       j.paused_reason,
       j.created_at,
       j.finished_at,
       j.item_count,
       i.items,
       i.available,
       i.running - r.kept        AS running,
       i.succeeded + r.kept      AS succeeded,
       i.failed,
       i.discarded,
       i.terminal + r.kept       AS terminal,
       r.valid,
       r.invalid,
       i.retried,
       r.first_result_at,
       r.last_result_at
FROM siwa.jobs j
CROSS JOIN LATERAL (
    SELECT count(*)                                          AS items,
           count(*) FILTER (WHERE state = 'available' AND (claim_singly OR id > j.claim_cursor)) AS available,
           count(*) FILTER (WHERE state = 'running'
                               OR (state = 'available' AND NOT claim_singly AND id <= j.claim_cursor)) AS running,
           count(*) FILTER (WHERE state = 'succeeded')       AS succeeded,
           count(*) FILTER (WHERE state = 'failed')          AS failed,
           count(*) FILTER (WHERE state = 'discarded')       AS discarded,
           count(*) FILTER (WHERE state IN ('succeeded', 'failed', 'discarded', 'cancelled')) AS terminal,
           count(*) FILTER (WHERE attempt > 1)               AS retried
    FROM siwa.job_items WHERE job_id = j.id) i
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE outcome = 'valid')         AS valid,
           count(*) FILTER (WHERE outcome = 'invalid')       AS invalid,
           count(*) FILTER (WHERE kept)                      AS kept,
           min(created_at)                                   AS first_result_at,
           max(created_at)                                   AS last_result_at
    FROM siwa.results WHERE job_id = j.id) r;

-- A job's summary counts its kept items as succeeded (their rows still read available).
CREATE OR REPLACE FUNCTION siwa.summarize_job(p_job bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    n_items bigint; states jsonb; n_retried bigint; n_kept bigint;
    outs jsonb; errs jsonb; first_at timestamptz; last_at timestamptz;
BEGIN
    SELECT count(*) INTO n_kept FROM siwa.results WHERE job_id = p_job AND kept;
    SELECT COALESCE(sum(n), 0), COALESCE(jsonb_object_agg(state, n), '{}'), COALESCE(sum(r), 0)
    INTO n_items, states, n_retried
    FROM (SELECT state, sum(n) AS n, sum(r) AS r
          FROM (SELECT state, count(*) AS n, count(*) FILTER (WHERE attempt > 1) AS r
                FROM siwa.job_items WHERE job_id = p_job GROUP BY state
                UNION ALL SELECT 'available', -n_kept, 0
                UNION ALL SELECT 'succeeded', n_kept, 0) c
          GROUP BY state HAVING sum(n) <> 0) s;
    WITH g AS (SELECT outcome, apple_error, count(*) AS n, min(created_at) AS f, max(created_at) AS l
               FROM siwa.results WHERE job_id = p_job GROUP BY outcome, apple_error)
    SELECT (SELECT COALESCE(jsonb_object_agg(outcome, n), '{}') FROM (SELECT outcome, sum(n) AS n FROM g GROUP BY outcome) a),
           (SELECT COALESCE(jsonb_object_agg(apple_error, n), '{}')
            FROM (SELECT apple_error, sum(n) AS n FROM g WHERE apple_error IS NOT NULL GROUP BY apple_error) b),
           (SELECT min(f) FROM g), (SELECT max(l) FROM g)
    INTO outs, errs, first_at, last_at;
    INSERT INTO siwa.job_summaries AS js (job_id, kind, state, priority, created_at, finished_at, items, item_states,
                                          outcomes, apple_errors, retried, first_result_at, last_result_at)
    SELECT j.id, j.kind, j.state, j.priority, j.created_at, j.finished_at, n_items, states, outs, errs, n_retried,
           first_at, last_at
    FROM siwa.jobs j WHERE j.id = p_job
    ON CONFLICT (job_id) DO UPDATE
    SET state = EXCLUDED.state, finished_at = EXCLUDED.finished_at, items = EXCLUDED.items,
        item_states = EXCLUDED.item_states, outcomes = EXCLUDED.outcomes, apple_errors = EXCLUDED.apple_errors,
        retried = EXCLUDED.retried, first_result_at = EXCLUDED.first_result_at,
        last_result_at = EXCLUDED.last_result_at, summarized_at = now()
    WHERE js.pruned_at IS NULL;
END $$;

-- A range lease counts its kept items, so its unfinished ones are counted without looking up
-- results: those still available and not singly, less `kept` (`ItemCounts.rangeUnfinished`).
ALTER TABLE siwa.item_leases ADD COLUMN kept integer NOT NULL DEFAULT 0;
