-- Safety stops of refresh-validation and revocation-sweep jobs (README "Safety stops and cron").
-- A job pointed at the wrong Apple, team or client sees mostly invalid_grant. One row per job
-- counts its first results; the completion statement that finds more than threshold_percent of
-- the first window_size results invalid pauses the job (SafetyStopSQL in the source). A
-- validation's invalid verdicts are held back (deferred_accounts) until the window passes or ops
-- resume the job, so a wrong target never marks real tokens invalid.

CREATE TABLE siwa.safety_stops (
    job_id            bigint      PRIMARY KEY REFERENCES siwa.jobs (id),
    -- open: counting; passed: the window is judged fine; tripped: the job was paused by the rule;
    -- overridden: ops resumed a tripped job (never paused again by the rule); exempt: the
    -- client's last finished job of this kind was already above the threshold, so the rule is off.
    state             text        NOT NULL DEFAULT 'open'
                      CHECK (state IN ('open', 'passed', 'tripped', 'overridden', 'exempt')),
    threshold_percent smallint    NOT NULL CHECK (threshold_percent BETWEEN 1 AND 99),
    window_size       integer     NOT NULL CHECK (window_size > 0),   -- least(window, item_count)
    baseline_job_id   bigint,                                         -- the client's last finished job
    baseline_percent  numeric(5, 1),                                  -- its invalid_grant share
    seen              integer     NOT NULL DEFAULT 0,                 -- finished items counted
    invalid           integer     NOT NULL DEFAULT 0,                 -- of which invalid_grant
    deferred_accounts bigint[]    NOT NULL DEFAULT '{}',              -- invalid verdicts not applied yet
    decided_seen      integer,                                        -- seen when the state left open
    decided_at        timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now()
);

-- The pause reason: what was seen, what to check, how to resume or cancel.
CREATE FUNCTION siwa.safety_stop_reason(p_job_id bigint, p_seen integer, p_invalid integer, p_threshold integer,
                                        p_held_back integer) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT format('safety stop: %s of the first %s results were invalid_grant (more than %s%%), which looks like the '
        || 'wrong Apple base URL, team, client or token key rather than real revocations%s. Check SIWA_APPLE_BASE_URL, '
        || 'the team and client IDs and siwa.job_outcomes for job %s. If the results are right: siwa-jobs job resume %s '
        || '(applies them; the rule does not stop this job again). If not: siwa-jobs job cancel %s, fix the '
        || 'configuration and enqueue again',
        p_invalid, p_seen, p_threshold,
        CASE WHEN p_held_back > 0 THEN format('; %s invalid verdicts are held back, not applied to accounts', p_held_back)
             ELSE '' END,
        p_job_id, p_job_id, p_job_id)
$$;

-- A job whose window never filled through completion statements (items discarded by lease rescue
-- or cancelled) is judged when it completes, on what was seen: tripped holds it paused with the
-- reason; passed applies the held-back verdicts.
CREATE FUNCTION siwa.judge_open_safety_stop() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s siwa.safety_stops;
BEGIN
    IF NEW.state = 'completed' AND OLD.state <> 'completed' THEN
        UPDATE siwa.safety_stops t
        SET state = CASE WHEN t.invalid * 100 > t.threshold_percent * greatest(t.seen, 1) THEN 'tripped' ELSE 'passed' END,
            decided_seen = t.seen, decided_at = now()
        WHERE t.job_id = NEW.id AND t.state = 'open'
        RETURNING * INTO s;
        IF FOUND AND s.state = 'tripped' THEN
            NEW.state := 'paused';
            NEW.finished_at := NULL;
            NEW.paused_reason := siwa.safety_stop_reason(NEW.id, s.seen, s.invalid, s.threshold_percent,
                                                         cardinality(s.deferred_accounts));
            INSERT INTO siwa.audit_log (actor, action, job_id, detail)
            VALUES ('worker', 'job.safety_stop', NEW.id, jsonb_build_object('seen', s.seen, 'invalid_grant', s.invalid,
                    'threshold_percent', s.threshold_percent, 'window', s.window_size, 'baseline_percent', s.baseline_percent,
                    'held_back', cardinality(s.deferred_accounts)));
        ELSIF FOUND THEN
            UPDATE siwa.accounts a SET token_status = 'invalid', token_checked_at = now(), updated_at = now()
            WHERE a.id = ANY(s.deferred_accounts) AND a.token_status <> 'revoked';
            INSERT INTO siwa.audit_log (actor, action, job_id, detail)
            VALUES ('worker', 'job.safety_passed', NEW.id, jsonb_build_object('seen', s.seen, 'invalid_grant', s.invalid,
                    'threshold_percent', s.threshold_percent, 'applied', cardinality(s.deferred_accounts)));
        END IF;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER jobs_judge_open_safety_stop BEFORE UPDATE OF state ON siwa.jobs
    FOR EACH ROW EXECUTE FUNCTION siwa.judge_open_safety_stop();

DO $$
BEGIN
    GRANT SELECT, INSERT, UPDATE ON siwa.safety_stops TO siwa_worker;
    GRANT EXECUTE ON FUNCTION siwa.safety_stop_reason(bigint, integer, integer, integer, integer) TO siwa_worker;
EXCEPTION WHEN undefined_object OR insufficient_privilege THEN
    RAISE NOTICE 'grants on siwa.safety_stops skipped: the siwa roles are missing; grant them by hand';
END $$;
