-- Claims by range: a job's planned items are leased by advancing the job's claim cursor and writing
-- one lease row per claimed range, not by rewriting every item (issue #12: PostgreSQL's CPU per
-- item). See README "How the queue claims".
--
-- Two ways an item is claimed:
-- * by range: items planned in the transaction that created their job (`claim_singly` false). A
--   claim takes a job's next items by id past `jobs.claim_cursor`, moves the cursor past them and
--   records the range in `item_leases`; the items themselves are not written until they complete.
--   An item handed out this way and not finished is `available`, not `claim_singly`, and at or
--   below its job's cursor: that is what "running" means for it (job_progress counts it so).
-- * singly, as before: items appended to a job later (sign-ins, notifications, a transfer's
--   batches after its canary), and every item that comes back (a retry, a release, a rescue, `job
--   retry`): `claim_singly` true, found through `job_items_claim_singly`, leased one row at a time
--   (`state` running, `lease_owner`, `lease_expires_at`).
-- Only a job's own planning may insert items with `claim_singly` false: the job is invisible until
-- that transaction commits, so no claim can move a cursor past an id that is not yet visible.
--
-- Why: a claim used to lock and rewrite each item (a new row version, two index entries and two
-- WAL lock records per item), and its completion rewrote it again with one more index entry,
-- because `state` appeared in an index predicate. Now nothing indexes a column a range item's
-- completion changes (`state`, `attempt`, `first_attempt_at`, `finished_at`, `last_error`), so that
-- update can stay on its page as a HOT update with no index entry at all.

-- Existing rows read false (no table rewrite); the items still to be claimed are then made
-- singly, so a job planned before this migration is claimed exactly as before.
ALTER TABLE siwa.job_items ADD COLUMN claim_singly boolean NOT NULL DEFAULT false;
UPDATE siwa.job_items SET claim_singly = true WHERE state IN ('available', 'running');
ALTER TABLE siwa.job_items ALTER COLUMN claim_singly SET DEFAULT true;

-- The per-item claim's order (run_at, id) over singly items only. A singly item that finishes
-- leaves it (its completion clears the flag), so it holds unfinished work only.
CREATE INDEX job_items_claim_singly ON siwa.job_items (job_id, run_at, id) WHERE claim_singly;
DROP INDEX siwa.job_items_claim_by_job;

-- The last item id a range claim handed out; range claims of a job take its row lock, so two
-- workers never take the same range.
ALTER TABLE siwa.jobs ADD COLUMN claim_cursor bigint NOT NULL DEFAULT 0;

-- A range item's completion is a HOT update only when its page has room for the new version: job
-- items are about 90 bytes and 105 once finished, so new partitions are filled to half (every row
-- of a page can be rewritten in place) instead of 80%. The table is about 1.6 times larger.
CREATE OR REPLACE FUNCTION siwa.create_item_partition(p_lo bigint, p_hi bigint, p_suffix text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    bound text := CASE WHEN p_lo = -9223372036854775808 THEN 'MINVALUE' ELSE p_lo::text END;
BEGIN
    EXECUTE format('CREATE TABLE siwa.%I (LIKE siwa.job_items INCLUDING DEFAULTS INCLUDING CONSTRAINTS) '
                   'WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.02)', 'job_items_' || p_suffix);
    EXECUTE format('ALTER TABLE siwa.job_items ATTACH PARTITION siwa.%I FOR VALUES FROM (%s) TO (%s)',
                   'job_items_' || p_suffix, bound, p_hi);
    EXECUTE format('CREATE TABLE siwa.%I (LIKE siwa.results INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', 'results_' || p_suffix);
    EXECUTE format('ALTER TABLE siwa.results ATTACH PARTITION siwa.%I FOR VALUES FROM (%s) TO (%s)',
                   'results_' || p_suffix, bound, p_hi);
    EXECUTE format('CREATE TABLE siwa.%I (LIKE siwa.result_history INCLUDING DEFAULTS)', 'result_history_' || p_suffix);
    EXECUTE format('ALTER TABLE siwa.result_history ATTACH PARTITION siwa.%I FOR VALUES FROM (%s) TO (%s)',
                   'result_history_' || p_suffix, bound, p_hi);
    INSERT INTO siwa.item_partitions (suffix, lo, hi) VALUES (p_suffix, p_lo, p_hi);
    -- The range claim reads a job's partition by name (so its plan is made once): the worker may.
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'siwa_worker') THEN
        EXECUTE format('GRANT SELECT ON siwa.%I TO siwa_worker', 'job_items_' || p_suffix);
    END IF;
END $$;
DO $$
DECLARE
    p record;
BEGIN
    FOR p IN SELECT suffix FROM siwa.item_partitions LOOP
        IF p.suffix <> 'legacy' THEN
            EXECUTE format('ALTER TABLE siwa.%I SET (fillfactor = 50)', 'job_items_' || p.suffix);
        END IF;
        IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'siwa_worker') THEN
            EXECUTE format('GRANT SELECT ON siwa.%I TO siwa_worker', 'job_items_' || p.suffix);
        END IF;
    END LOOP;
END $$;

-- One row per claimed range: items [first_id, last_id] of job_id not yet finished belong to
-- owner until expires_at (renewed while the worker lives). A rescue hands the range's unfinished
-- items back as singly items once it expires; a range with nothing unfinished is deleted.
CREATE TABLE siwa.item_leases (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id     bigint      NOT NULL,
    first_id   bigint      NOT NULL,
    last_id    bigint      NOT NULL,
    owner      text        NOT NULL,
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (first_id <= last_id)
) WITH (fillfactor = 70);
CREATE INDEX item_leases_expiry ON siwa.item_leases (expires_at);
CREATE INDEX item_leases_owner ON siwa.item_leases (owner);

-- Results keep one index: the key, led by the job (a job's results are read by job; the item key
-- is unique within it). It was the key (item_id, job_id) and an index (job_id, outcome): two index
-- entries per result.
ALTER TABLE siwa.results DROP CONSTRAINT results_pkey;
ALTER TABLE siwa.results ADD CONSTRAINT results_pkey PRIMARY KEY (job_id, item_id);
DROP INDEX siwa.results_job;

-- Progress: an item handed out by range and not finished counts as running, not available.
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
           min(created_at)                                   AS first_result_at,
           max(created_at)                                   AS last_result_at
    FROM siwa.results WHERE job_id = j.id) r;

DO $$
BEGIN
    GRANT SELECT, INSERT, UPDATE, DELETE ON siwa.item_leases TO siwa_worker;
EXCEPTION WHEN undefined_object OR insufficient_privilege THEN
    RAISE NOTICE 'grants on siwa.item_leases skipped: the siwa roles are missing; grant them by hand';
END $$;
