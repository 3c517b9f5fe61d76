-- Views for `siwa-jobs dashboard` (issue #11): personal-data free by construction (issue #13 item
-- 4): no sub, email, transfer_sub, token, fingerprint, payload or code appears in any of them. The
-- app's own user id (external_user_id) is shown where an item failed, so ops can find the user in
-- the app; the dashboard escapes every value. siwa_dashboard reads them (and the existing
-- job_progress, job_outcomes, token_health, transfer_status, live_workers, rate_budgets_status).

-- Every job with its progress and priority; the dashboard computes rate and ETA from the results' times.
CREATE VIEW siwa.dashboard_jobs AS
SELECT p.job_id, p.kind, p.job_state, j.priority, p.paused_reason, p.created_at, p.finished_at,
       p.items, p.available, p.running, p.succeeded, p.failed, p.discarded, p.terminal,
       p.first_result_at, p.last_result_at
FROM siwa.job_progress p JOIN siwa.jobs j ON j.id = p.job_id;

-- Results that are not plain successes, with the app's user id: one row per result.
CREATE VIEW siwa.dashboard_job_errors AS
SELECT r.job_id, r.item_id, a.external_user_id, r.outcome, r.apple_error, r.http_status, r.attempt, r.created_at
FROM siwa.results r LEFT JOIN siwa.accounts a ON a.id = r.account_id
WHERE r.outcome NOT IN ('valid', 'revoked_or_invalid', 'migrated', 'exported', 'applied', 'ok');

-- Refresh-token verdicts per day and client (the nightly validations' results), for the health chart.
CREATE VIEW siwa.dashboard_token_health_daily AS
SELECT (date_trunc('day', r.created_at AT TIME ZONE 'UTC'))::date AS day,
       coalesce(j.spec->>'team_id', '') AS team_id, coalesce(j.spec->>'client_id', '') AS client_id,
       count(*) FILTER (WHERE r.outcome = 'valid')                   AS valid,
       count(*) FILTER (WHERE r.outcome = 'invalid')                 AS invalid,
       count(*) FILTER (WHERE r.outcome NOT IN ('valid', 'invalid')) AS other
FROM siwa.results r JOIN siwa.jobs j ON j.id = r.job_id
WHERE j.kind = 'refresh-validation'
GROUP BY 1, 2, 3;

-- The notifications inbox without payload, jti, sub, email or account ids.
CREATE VIEW siwa.dashboard_notifications AS
SELECT id, received_at, verification, event_type, aud AS client_id, event_time, outcome, processed_at,
       planned_job_id, split_part(coalesce(rejection_reason, ''), ':', 1) AS rejection_code
FROM siwa.notifications;

DO $$
BEGIN
    GRANT SELECT ON siwa.dashboard_jobs, siwa.dashboard_job_errors, siwa.dashboard_token_health_daily,
        siwa.dashboard_notifications TO siwa_dashboard;
EXCEPTION WHEN undefined_object OR insufficient_privilege THEN
    RAISE NOTICE 'grants on the dashboard views skipped: the siwa roles are missing; grant them by hand';
END $$;
