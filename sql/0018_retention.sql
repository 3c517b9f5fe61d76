-- Retention without bloat (issue #11; README "Retention and job control").
--
-- job_items, results and the new result_history are partitioned BY RANGE (job_id): every job's
-- rows live in one partition, a partition holds the jobs created in about one day, and
-- `siwa-jobs prune` drops a partition whole (no DELETE, no vacuum) once every job in it finished
-- longer ago than the retention period. Partitions are made by the AFTER INSERT trigger on
-- siwa.jobs (siwa.ensure_job_partition), one ahead of the job ids in use, so every planner, in
-- every kind, finds its partition; their width (in job ids) is the number of jobs created in the
-- last 24 hours, at least 1.
--
-- Existing rows: the old tables become the first partition, [MINVALUE, first id after the last
-- job), so the migration moves no row; it builds one unique index per table (the new primary
-- keys include the partition key) and checks the partition bound with one scan of each.

-- The old tables keep their data under new names; their indexes are renamed so the new parents'
-- indexes can take the old names (equivalent ones are attached, not rebuilt).
ALTER TABLE siwa.job_items RENAME TO job_items_legacy;
ALTER TABLE siwa.results RENAME TO results_legacy;
ALTER TABLE siwa.job_items_legacy DROP CONSTRAINT job_items_pkey;
ALTER TABLE siwa.results_legacy DROP CONSTRAINT results_pkey;
ALTER INDEX siwa.job_items_claim_by_job RENAME TO job_items_legacy_claim_by_job;
ALTER INDEX siwa.job_items_leased RENAME TO job_items_legacy_leased;
ALTER INDEX siwa.results_job RENAME TO results_legacy_job;
ALTER TABLE siwa.job_items_legacy RENAME CONSTRAINT job_items_job_id_fkey TO job_items_legacy_job_id_fkey;
ALTER TABLE siwa.job_items_legacy RENAME CONSTRAINT job_items_account_id_fkey TO job_items_legacy_account_id_fkey;
ALTER TABLE siwa.results_legacy RENAME CONSTRAINT results_account_id_fkey TO results_legacy_account_id_fkey;

-- LIKE copies every column (with those later migrations added), defaults, checks and identity.
CREATE TABLE siwa.job_items (LIKE siwa.job_items_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY)
    PARTITION BY RANGE (job_id);
ALTER TABLE siwa.job_items ADD CONSTRAINT job_items_pkey PRIMARY KEY (id, job_id);
ALTER TABLE siwa.job_items ADD CONSTRAINT job_items_job_id_fkey FOREIGN KEY (job_id) REFERENCES siwa.jobs (id);
ALTER TABLE siwa.job_items ADD CONSTRAINT job_items_account_id_fkey FOREIGN KEY (account_id) REFERENCES siwa.accounts (id);
CREATE INDEX job_items_claim_by_job ON siwa.job_items (job_id, run_at, id) WHERE state = 'available';
CREATE INDEX job_items_leased ON siwa.job_items (lease_expires_at) WHERE state = 'running';

CREATE TABLE siwa.results (LIKE siwa.results_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    PARTITION BY RANGE (job_id);
ALTER TABLE siwa.results ADD CONSTRAINT results_pkey PRIMARY KEY (item_id, job_id);
ALTER TABLE siwa.results ADD CONSTRAINT results_account_id_fkey FOREIGN KEY (account_id) REFERENCES siwa.accounts (id);
CREATE INDEX results_job ON siwa.results (job_id, outcome);

-- `job retry` moves an item's result here before the item runs again, so the new attempt writes
-- a fresh row in results and the old one stays visible (`superseded_at`: when it was replaced).
CREATE TABLE siwa.result_history (LIKE siwa.results_legacy INCLUDING DEFAULTS,
                                  superseded_at timestamptz NOT NULL DEFAULT now())
    PARTITION BY RANGE (job_id);
CREATE INDEX result_history_item ON siwa.result_history (job_id, item_id);

-- The partitions, one row each: job ids [lo, hi), in all three tables under the suffix.
CREATE TABLE siwa.item_partitions (
    suffix     text        PRIMARY KEY,                -- job_items_<suffix>, results_<suffix>, result_history_<suffix>
    lo         bigint      NOT NULL UNIQUE,
    hi         bigint      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (lo < hi)
);

-- Per-job summary, kept forever: written by `prune` for every finished job before its rows go
-- (and for any finished job `prune` sees without one). outcomes: {"valid": 12, ...};
-- apple_errors: {"invalid_grant": 3, ...}; no token, code or payload.
CREATE TABLE siwa.job_summaries (
    job_id          bigint      PRIMARY KEY,
    kind            text        NOT NULL,
    state           text        NOT NULL,
    priority        smallint    NOT NULL,
    created_at      timestamptz NOT NULL,
    finished_at     timestamptz,
    items           bigint      NOT NULL,
    item_states     jsonb       NOT NULL DEFAULT '{}',
    outcomes        jsonb       NOT NULL DEFAULT '{}',
    apple_errors    jsonb       NOT NULL DEFAULT '{}',
    retried         bigint      NOT NULL DEFAULT 0,
    first_result_at timestamptz,
    last_result_at  timestamptz,
    summarized_at   timestamptz NOT NULL DEFAULT now(),
    pruned_at       timestamptz
);

-- Writes (or rewrites) job `p_job`'s summary from its rows: two scans, one of its items and one
-- of its results, both in its partition. Called when a job completes or is cancelled (trigger
-- below) and by `prune` for a finished job without one.
CREATE FUNCTION siwa.summarize_job(p_job bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    n_items bigint; states jsonb; n_retried bigint;
    outs jsonb; errs jsonb; first_at timestamptz; last_at timestamptz;
BEGIN
    SELECT COALESCE(sum(n), 0), COALESCE(jsonb_object_agg(state, n), '{}'), COALESCE(sum(r), 0)
    INTO n_items, states, n_retried
    FROM (SELECT state, count(*) AS n, count(*) FILTER (WHERE attempt > 1) AS r
          FROM siwa.job_items WHERE job_id = p_job GROUP BY state) s;
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

CREATE FUNCTION siwa.jobs_summarize() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM siwa.summarize_job(NEW.id);
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_summarize AFTER UPDATE OF state ON siwa.jobs
    FOR EACH ROW WHEN (NEW.state IN ('completed', 'cancelled') AND OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION siwa.jobs_summarize();

-- Makes the partition for [lo, hi) in the three tables: created empty beside the parent, then
-- attached (SHARE UPDATE EXCLUSIVE on the parent: claims and completions go on meanwhile).
CREATE FUNCTION siwa.create_item_partition(p_lo bigint, p_hi bigint, p_suffix text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    bound text := CASE WHEN p_lo = -9223372036854775808 THEN 'MINVALUE' ELSE p_lo::text END;
BEGIN
    EXECUTE format('CREATE TABLE siwa.%I (LIKE siwa.job_items INCLUDING DEFAULTS INCLUDING CONSTRAINTS) '
                   'WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02)', 'job_items_' || p_suffix);
    EXECUTE format('ALTER TABLE siwa.job_items ATTACH PARTITION siwa.%I FOR VALUES FROM (%s) TO (%s)',
                   'job_items_' || p_suffix, bound, p_hi);
    EXECUTE format('CREATE TABLE siwa.%I (LIKE siwa.results INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', 'results_' || p_suffix);
    EXECUTE format('ALTER TABLE siwa.results ATTACH PARTITION siwa.%I FOR VALUES FROM (%s) TO (%s)',
                   'results_' || p_suffix, bound, p_hi);
    EXECUTE format('CREATE TABLE siwa.%I (LIKE siwa.result_history INCLUDING DEFAULTS)', 'result_history_' || p_suffix);
    EXECUTE format('ALTER TABLE siwa.result_history ATTACH PARTITION siwa.%I FOR VALUES FROM (%s) TO (%s)',
                   'result_history_' || p_suffix, bound, p_hi);
    INSERT INTO siwa.item_partitions (suffix, lo, hi) VALUES (p_suffix, p_lo, p_hi);
END $$;

-- The partition holding job `p_job`, made when none does, and the next one ahead of time once the
-- job ids reach the last partition (so a statement that inserts a job and its items together finds
-- its partition: it could not attach one while it uses job_items itself). The job's partition is
-- locked (ROW EXCLUSIVE) so `prune` cannot drop it before the job's transaction ends. Serialised
-- by an advisory lock ("SIWAPART").
CREATE FUNCTION siwa.ensure_job_partition(p_job bigint) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    found_suffix text;
    top bigint;
    width bigint;
BEGIN
    SELECT suffix INTO found_suffix FROM siwa.item_partitions WHERE lo <= p_job AND p_job < hi;
    SELECT max(hi) INTO top FROM siwa.item_partitions;
    IF found_suffix IS NULL OR p_job + 1 >= top THEN
        PERFORM pg_advisory_xact_lock(5861637064462164);
        SELECT suffix INTO found_suffix FROM siwa.item_partitions WHERE lo <= p_job AND p_job < hi;
        SELECT max(hi) INTO top FROM siwa.item_partitions;
        SELECT GREATEST(1, LEAST(100000, count(*))) INTO width FROM siwa.jobs WHERE created_at > now() - interval '24 hours';
        IF found_suffix IS NULL THEN
            found_suffix := 'j' || LEAST(COALESCE(top, p_job), p_job);
            PERFORM siwa.create_item_partition(LEAST(COALESCE(top, p_job), p_job), p_job + width, found_suffix);
            top := p_job + width;
        END IF;
        IF p_job + 1 >= top THEN
            BEGIN
                PERFORM siwa.create_item_partition(top, top + width, 'j' || top);
            EXCEPTION WHEN object_in_use THEN
                NULL;   -- this statement uses job_items itself: the next job's trigger makes it
            END;
        END IF;
    END IF;
    EXECUTE format('LOCK TABLE siwa.%I, siwa.%I IN ROW EXCLUSIVE MODE', 'job_items_' || found_suffix, 'results_' || found_suffix);
    RETURN found_suffix;
END $$;

CREATE FUNCTION siwa.jobs_ensure_partition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM siwa.ensure_job_partition(NEW.id);
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_ensure_partition AFTER INSERT ON siwa.jobs
    FOR EACH ROW EXECUTE FUNCTION siwa.jobs_ensure_partition();

-- The old rows: one partition up to the last job id so far; new ids continue after the old ones.
DO $$
DECLARE
    top bigint := COALESCE((SELECT max(id) FROM siwa.jobs), 0) + 1;
    next_item bigint := COALESCE((SELECT max(id) FROM siwa.job_items_legacy), 0) + 1;
BEGIN
    ALTER TABLE siwa.job_items_legacy ALTER COLUMN id DROP IDENTITY IF EXISTS;
    EXECUTE format('ALTER TABLE siwa.job_items ALTER COLUMN id RESTART WITH %s', next_item);
    EXECUTE format('ALTER TABLE siwa.job_items ATTACH PARTITION siwa.job_items_legacy FOR VALUES FROM (MINVALUE) TO (%s)', top);
    EXECUTE format('ALTER TABLE siwa.results ATTACH PARTITION siwa.results_legacy FOR VALUES FROM (MINVALUE) TO (%s)', top);
    CREATE TABLE siwa.result_history_legacy (LIKE siwa.result_history INCLUDING DEFAULTS);
    EXECUTE format('ALTER TABLE siwa.result_history ATTACH PARTITION siwa.result_history_legacy FOR VALUES FROM (MINVALUE) TO (%s)', top);
    INSERT INTO siwa.item_partitions (suffix, lo, hi) VALUES ('legacy', -9223372036854775808, top);
    -- The first partition for new jobs, ahead of time.
    PERFORM siwa.create_item_partition(top, top + (SELECT GREATEST(1, LEAST(100000, count(*))) FROM siwa.jobs
                                                   WHERE created_at > now() - interval '24 hours'), 'j' || top);
END $$;
-- Views read the tables by reference: point them at the new parents (same text as 0002, 0004).
CREATE OR REPLACE VIEW siwa.job_progress AS
SELECT j.id                                                        AS job_id,
       j.kind,
       j.state                                                     AS job_state,
       j.paused_reason,
       j.created_at,
       j.finished_at,
       j.item_count,
       count(i.id)                                                 AS items,
       count(i.id) FILTER (WHERE i.state = 'available')            AS available,
       count(i.id) FILTER (WHERE i.state = 'running')              AS running,
       count(i.id) FILTER (WHERE i.state = 'succeeded')            AS succeeded,
       count(i.id) FILTER (WHERE i.state = 'failed')               AS failed,
       count(i.id) FILTER (WHERE i.state = 'discarded')            AS discarded,
       count(i.id) FILTER (WHERE i.state IN ('succeeded', 'failed', 'discarded', 'cancelled')) AS terminal,
       count(r.item_id) FILTER (WHERE r.outcome = 'valid')         AS valid,
       count(r.item_id) FILTER (WHERE r.outcome = 'invalid')       AS invalid,
       count(i.id) FILTER (WHERE i.attempt > 1)                    AS retried,
       min(r.created_at)                                           AS first_result_at,
       max(r.created_at)                                           AS last_result_at
FROM siwa.jobs j
LEFT JOIN siwa.job_items i ON i.job_id = j.id
LEFT JOIN siwa.results r ON r.item_id = i.id AND r.job_id = i.job_id
GROUP BY j.id;

CREATE OR REPLACE VIEW siwa.job_outcomes AS
SELECT job_id, outcome, apple_error, http_status, count(*) AS items
FROM siwa.results
GROUP BY job_id, outcome, apple_error, http_status;

CREATE OR REPLACE VIEW siwa.email_changes AS
SELECT r.job_id, r.item_id, a.id AS account_id,
       r.detail->>'external_user_id' AS external_user_id,
       r.detail->>'email_change'     AS change,
       r.detail->>'old_email'        AS old_email,
       r.detail->>'new_email'        AS new_email,
       r.created_at
FROM siwa.results r
JOIN siwa.transfer_jobs t ON t.job_id = r.job_id AND t.direction = 'import'
LEFT JOIN siwa.accounts a ON a.team_id = t.team_id AND a.client_id = t.client_id
                         AND a.external_user_id = r.detail->>'external_user_id'
WHERE r.outcome = 'migrated';

-- The audit log stays append-only for everyone, except `prune` removing rows older than the audit
-- retention (it sets siwa.audit_prune_before for its own transaction; only the owner may DELETE).
-- A BRIN index on `at` finds them without a scan and costs next to nothing on insert.
CREATE OR REPLACE FUNCTION siwa.audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND OLD.at < COALESCE(NULLIF(current_setting('siwa.audit_prune_before', true), '')::timestamptz, '-infinity') THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'siwa.audit_log is append-only' USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE INDEX audit_log_at ON siwa.audit_log USING brin (at);

-- Raw notification payloads are dropped (NULL) once processed plus their retention.
ALTER TABLE siwa.notifications ALTER COLUMN payload DROP NOT NULL;

DO $$
BEGIN
    GRANT SELECT, INSERT, UPDATE ON siwa.job_items TO siwa_worker;
    GRANT SELECT, INSERT ON siwa.results TO siwa_worker;
    GRANT SELECT, INSERT ON siwa.result_history TO siwa_worker;
    GRANT SELECT ON siwa.item_partitions, siwa.job_summaries TO siwa_worker;
    GRANT INSERT ON siwa.job_items TO siwa_receiver;
    GRANT SELECT ON siwa.job_progress, siwa.job_outcomes TO siwa_worker, siwa_dashboard;
    GRANT SELECT ON siwa.email_changes TO siwa_worker, siwa_dashboard;
EXCEPTION WHEN undefined_object OR insufficient_privilege THEN
    RAISE NOTICE 'grants on the partitioned tables skipped: the siwa roles are missing; grant them by hand';
END $$;
