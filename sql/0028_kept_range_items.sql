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

-- A job's summary counts its kept items as succeeded (their rows still read available). The
-- function that writes it is kept under a new name and wrapped, as 0027 wraps its own (a migration
-- is history and cannot share a body with 0018); the wrapper moves the kept items' count from
-- available to succeeded in the summary it just wrote.
ALTER FUNCTION siwa.summarize_job(bigint) RENAME TO summarize_job_rows;

CREATE FUNCTION siwa.summarize_job(p_job bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    n_kept bigint;
BEGIN
    PERFORM siwa.summarize_job_rows(p_job);
    SELECT count(*) INTO n_kept FROM siwa.results WHERE job_id = p_job AND kept;
    IF n_kept > 0 THEN
        UPDATE siwa.job_summaries s
        SET item_states = (SELECT COALESCE(jsonb_object_agg(key, n), '{}')
                           FROM (SELECT key, sum(n) AS n
                                 FROM (SELECT key, value::bigint AS n FROM jsonb_each_text(s.item_states)
                                       UNION ALL SELECT 'available', -n_kept
                                       UNION ALL SELECT 'succeeded', n_kept) c
                                 GROUP BY key HAVING sum(n) <> 0) a)
        WHERE s.job_id = p_job AND s.pruned_at IS NULL;
    END IF;
END $$;
REVOKE EXECUTE ON FUNCTION siwa.summarize_job(bigint) FROM PUBLIC;
DO $$
BEGIN
    GRANT EXECUTE ON FUNCTION siwa.summarize_job(bigint) TO siwa_worker, siwa_receiver;
EXCEPTION WHEN undefined_object OR insufficient_privilege THEN
    RAISE NOTICE 'siwa roles missing: grant EXECUTE on siwa.summarize_job by hand';
END $$;

-- A range lease counts its kept items, so its unfinished ones are counted without looking up
-- results: those still available and not singly, less `kept` (`ItemCounts.rangeUnfinished`).
ALTER TABLE siwa.item_leases ADD COLUMN kept integer NOT NULL DEFAULT 0;
