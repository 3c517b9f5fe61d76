-- Dashboard views. None exposes a token column.

-- Progress of each job: items by state, outcomes, timing.
CREATE VIEW siwa.job_progress AS
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
LEFT JOIN siwa.results r ON r.item_id = i.id
GROUP BY j.id;

-- Outcomes of each job by Apple error and HTTP status.
CREATE VIEW siwa.job_outcomes AS
SELECT job_id, outcome, apple_error, http_status, count(*) AS items
FROM siwa.results
GROUP BY job_id, outcome, apple_error, http_status;

-- Refresh-token health per client.
CREATE VIEW siwa.token_health AS
SELECT team_id, client_id, token_status,
       count(*)                                                     AS accounts,
       count(*) FILTER (WHERE token_checked_at > now() - interval '24 hours') AS checked_last_24h,
       max(token_checked_at)                                        AS last_checked_at
FROM siwa.accounts
WHERE deleted_at IS NULL
GROUP BY team_id, client_id, token_status;

-- Accounts without token material, for dashboards and support tools.
CREATE VIEW siwa.account_summary AS
SELECT id, external_user_id, team_id, client_id, sub, email, is_private_email, email_forwarding,
       refresh_token_fingerprint, token_status, token_checked_at, consent_revoked_at, deleted_at,
       transfer_sub, created_at, updated_at
FROM siwa.accounts;
