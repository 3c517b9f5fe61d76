-- App transfer between teams (apple-api.md §4; Apple TN3159): the sending team exchanges each
-- user's sub for a transfer_sub, hands a CSV to the recipient team, which exchanges each
-- transfer_sub for its own sub (and a new private relay email) within 60 days of the transfer.

-- One row per transfer-export or transfer-import job: what it moves, the transfer date, and the
-- canary gate. Only the first `canary_size` items are planned at enqueue; the completion statement
-- that finishes the last canary item plans the rest (see TransferCanarySQL in the source).
CREATE TABLE siwa.transfer_jobs (
    job_id            bigint      PRIMARY KEY REFERENCES siwa.jobs (id),
    direction         text        NOT NULL CHECK (direction IN ('export', 'import')),
    team_id           text        NOT NULL,            -- the team this job authenticates as
    client_id         text        NOT NULL,
    peer_team_id      text,                            -- export: target (recipient); import: source, if known
    transfer_date     date        NOT NULL,            -- the day the app transfer was (or will be) accepted
    import_id         bigint,                          -- import: the loaded CSV
    retry_failed      boolean     NOT NULL DEFAULT false,
    max_attempts      smallint    NOT NULL DEFAULT 5,
    canary_size       integer     NOT NULL,
    canary_remaining  integer     NOT NULL,            -- canary items not yet terminal
    canary_succeeded  integer     NOT NULL DEFAULT 0,
    canary_last_key   bigint      NOT NULL DEFAULT 0,  -- export: last canary account id; import: last canary line
    released_at       timestamptz,                     -- when the rest was planned
    CONSTRAINT transfer_jobs_direction CHECK ((direction = 'import') = (import_id IS NOT NULL))
);

-- Sending side: one row per (account, recipient team). transfer_sub is NULL when Apple refused
-- the user (failure holds Apple's error, e.g. invalid_request for a user who revoked access).
CREATE TABLE siwa.transfer_subs (
    account_id      bigint      NOT NULL REFERENCES siwa.accounts (id),
    target_team_id  text        NOT NULL,
    transfer_sub    text,
    failure         text,
    job_id          bigint      NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, target_team_id),
    CONSTRAINT transfer_subs_outcome CHECK ((transfer_sub IS NULL) <> (failure IS NULL))
);
CREATE INDEX transfer_subs_value ON siwa.transfer_subs (transfer_sub) WHERE transfer_sub IS NOT NULL;

-- Receiving side: one row per loaded hand-off file, and its rows (validated before they land).
CREATE TABLE siwa.transfer_imports (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    team_id         text        NOT NULL,              -- the recipient team
    client_id       text        NOT NULL,
    source_team_id  text,                              -- the sending team, if known
    transfer_date   date        NOT NULL,
    file_name       text        NOT NULL,
    file_bytes      bigint      NOT NULL,
    row_count       integer     NOT NULL,
    created_by      text        NOT NULL DEFAULT current_user,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- No foreign key to transfer_imports: rows are written only by the loader, in the transaction that
-- creates their import, and a per-row FK check would triple the cost of loading a large file.
CREATE TABLE siwa.transfer_import_rows (
    import_id         bigint  NOT NULL,
    line_no           integer NOT NULL,                -- 1-based line in the file (the header is line 1)
    external_user_id  text    NOT NULL CHECK (external_user_id <> ''),
    transfer_sub      text    NOT NULL CHECK (transfer_sub <> ''),
    state             text    NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'migrated', 'failed', 'conflict')),
    reason            text,
    job_id            bigint,
    PRIMARY KEY (import_id, line_no),
    CONSTRAINT transfer_import_rows_sub UNIQUE (import_id, transfer_sub),
    CONSTRAINT transfer_import_rows_user UNIQUE (import_id, external_user_id)
);

-- Sign-ins during the window carry the transfer_sub claim; find accounts by it.
CREATE INDEX accounts_transfer_sub ON siwa.accounts (transfer_sub) WHERE transfer_sub IS NOT NULL;

-- Each transfer job with its window: 60 days from transfer_date (TN3159). days_left is negative
-- once the window has closed; the job then refuses to run (transfer the app back, then run again).
CREATE VIEW siwa.transfer_status AS
SELECT t.job_id, t.direction, t.team_id, t.client_id, t.peer_team_id, t.transfer_date, t.import_id,
       t.transfer_date + 60                                        AS window_closes_on,
       (t.transfer_date + 60) - current_date                      AS days_left,
       t.canary_size, t.canary_remaining, t.canary_succeeded, t.released_at,
       p.job_state, p.paused_reason, p.items, p.succeeded, p.failed, p.discarded, p.available, p.running
FROM siwa.transfer_jobs t
JOIN siwa.job_progress p ON p.job_id = t.job_id;

-- What an app needs after an import to update its user table or re-send welcome mail: one row
-- per migrated user. change: relay_updated (old relay -> new relay), relay_new (no previous
-- address), unchanged, kept_non_relay (a real email: Apple does not return it, the old one is
-- kept), kept_no_email (Apple returned none; the old address is kept), none.
CREATE VIEW siwa.email_changes AS
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

-- siwa.account_by_transfer_sub(team, transfer_sub): during the 60-day window Apple puts a
-- transfer_sub claim in the recipient team's identity tokens. Given the recipient team ID and the
-- claim, returns the account to sign the user in to, best match first:
--   'recipient'  the recipient team's account already migrated with this transfer_sub;
--   'sender'     the sending team's account whose export produced this transfer_sub (window open);
--   'import'     a loaded hand-off row not yet migrated (window open): external_user_id only.
-- days_left is the window's remaining days (negative when closed).
CREATE FUNCTION siwa.account_by_transfer_sub(p_team_id text, p_transfer_sub text)
RETURNS TABLE (account_id bigint, external_user_id text, team_id text, client_id text, sub text,
               matched_via text, days_left integer)
LANGUAGE sql STABLE AS $$
    (SELECT a.id, a.external_user_id, a.team_id, a.client_id, a.sub, 'recipient'::text, NULL::integer
     FROM siwa.accounts a
     WHERE a.transfer_sub = p_transfer_sub AND a.team_id = p_team_id AND a.deleted_at IS NULL
     ORDER BY a.id LIMIT 1)
    UNION ALL
    (SELECT a.id, a.external_user_id, a.team_id, a.client_id, a.sub, 'sender'::text,
            (max(t.transfer_date) + 60) - current_date
     FROM siwa.transfer_subs s
     JOIN siwa.accounts a ON a.id = s.account_id
     JOIN siwa.transfer_jobs t ON t.direction = 'export' AND t.team_id = a.team_id AND t.client_id = a.client_id
                              AND t.peer_team_id = s.target_team_id
     WHERE s.transfer_sub = p_transfer_sub AND s.target_team_id = p_team_id AND a.deleted_at IS NULL
     GROUP BY a.id
     HAVING (max(t.transfer_date) + 60) >= current_date
     ORDER BY a.id LIMIT 1)
    UNION ALL
    (SELECT NULL::bigint, r.external_user_id, i.team_id, i.client_id, NULL::text, 'import'::text,
            (i.transfer_date + 60) - current_date
     FROM siwa.transfer_import_rows r
     JOIN siwa.transfer_imports i ON i.id = r.import_id
     WHERE r.transfer_sub = p_transfer_sub AND i.team_id = p_team_id AND r.state <> 'migrated'
       AND (i.transfer_date + 60) >= current_date
     ORDER BY i.id DESC LIMIT 1)
$$;
COMMENT ON FUNCTION siwa.account_by_transfer_sub(text, text) IS
    'Sign-in during the 60-day transfer window: find the account for an identity token''s transfer_sub claim (recipient team ID, claim).';

DO $$
BEGIN
    GRANT SELECT, INSERT, UPDATE ON siwa.transfer_jobs, siwa.transfer_subs, siwa.transfer_imports,
        siwa.transfer_import_rows TO siwa_worker;
    GRANT SELECT ON siwa.transfer_status, siwa.email_changes TO siwa_worker, siwa_dashboard;
    GRANT EXECUTE ON FUNCTION siwa.account_by_transfer_sub(text, text) TO siwa_worker;
EXCEPTION WHEN undefined_object THEN
    RAISE NOTICE 'siwa roles missing: grants for the transfer tables skipped';
END $$;
