-- The sign-in exchange (issue #10 parts 1 and 2; README "Sign-in: accounts in through the exchange").
-- An app backend in any language calls siwa.submit_sign_in(...) with what the client half of Sign in
-- with Apple handed it (identity token, authorization code, nonce); a worker verifies the token,
-- exchanges the code once and writes the outcome back into the row, with a NOTIFY on channel
-- `siwa_sign_ins` (payload {"id": N, "outcome": "..."}) the app can LISTEN on.
-- Applied by `siwa-jobs migrate`; never edit after it has been applied anywhere.

-- The name the app forwards from the first authorization (Apple never sends it to the server).
ALTER TABLE siwa.accounts ADD COLUMN name text;

-- The inbox: one row per submitted sign-in. identity_token, authorization_code and nonce are
-- credentials for at most a few minutes: the worker wipes them (NULL) in the statement that
-- records the outcome, keeping only fingerprints (keyed, `hmac:` + 16 hex, as everywhere else).
CREATE TABLE siwa.sign_ins (
    id                          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    submitted_at                timestamptz NOT NULL DEFAULT now(),
    team_id                     text        NOT NULL,
    client_id                   text        NOT NULL,            -- the identity token's aud must be this
    identity_token              text,                            -- wiped once processed
    authorization_code          text,                            -- wiped once processed
    nonce                       text,                            -- the raw nonce; wiped once processed
    nonce_sha256                text,                            -- or its SHA-256 hex, as the app sent it
    redirect_uri                text,                            -- web clients only
    name                        text,                            -- first authorization only
    email                       text,                            -- first authorization only
    external_user_id            text,                            -- the app's own user id, if it has one
    job_id                      bigint      NOT NULL,            -- the sign-in job whose item carries it
    identity_token_fingerprint  text,
    code_fingerprint            text,
    -- The outcome: linked (an account existed: same sub, or its transfer_sub), created,
    -- identity_token_rejected (reason: nonce_mismatch, wrong_audience, expired, alg_not_allowed,
    -- unknown_kid, bad_signature, ...), code_rejected (Apple refused the code, e.g. invalid_grant),
    -- configuration_error (no credentials for the client, invalid_client, ...), conflict (the
    -- external_user_id given belongs to another account).
    outcome                     text        CHECK (outcome IN ('linked', 'created', 'identity_token_rejected', 'code_rejected',
                                                               'configuration_error', 'conflict')),
    reason                      text,                            -- machine code, e.g. nonce_mismatch or invalid_grant
    detail                      text,                            -- human text; never a token
    account_id                  bigint      REFERENCES siwa.accounts (id),
    sub                         text,
    account_email               text,                            -- the account's email after the sign-in
    is_private_email            boolean,
    real_user_status            integer,                         -- 0 unsupported, 1 unknown, 2 likely real
    matched_via                 text,                            -- sub, transfer_sub:recipient|sender|import, new
    processed_at                timestamptz,
    CONSTRAINT sign_ins_nonce_one CHECK (nonce IS NULL OR nonce_sha256 IS NULL),
    CONSTRAINT sign_ins_wiped CHECK (processed_at IS NULL
                                     OR (identity_token IS NULL AND authorization_code IS NULL AND nonce IS NULL))
);

-- Sign-in jobs are standing: one per team, client and UTC day (unique key
-- `sign-in:TEAM:CLIENT:YYYY-MM-DD`), planned at priority 0 by the day's first submission and kept
-- running while idle, so a submission only adds an item. The queue completes a running job with
-- nothing left; for today's sign-in job that update is skipped, while an earlier day's job
-- completes once drained, so retention (`siwa-jobs prune`) can drop its items like any other
-- job's (a cancelled one is left alone: the next submission starts a new job).
CREATE FUNCTION siwa.keep_sign_in_job_open() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.unique_key LIKE '%:' || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD') THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER jobs_keep_sign_in_open BEFORE UPDATE OF state ON siwa.jobs
    FOR EACH ROW WHEN (NEW.kind = 'sign-in' AND OLD.state = 'running' AND NEW.state = 'completed')
    EXECUTE FUNCTION siwa.keep_sign_in_job_open();

-- Submits one sign-in and wakes the workers (NOTIFY siwa_jobs). Returns the row's id; the outcome
-- arrives in the row (outcome, reason, account_id, sub, account_email, is_private_email) with a
-- NOTIFY on `siwa_sign_ins`. Give the raw nonce (p_nonce: the token's nonce claim must be its
-- SHA-256 hex, as native apps send it, or the nonce itself) or its SHA-256 hex (p_nonce_sha256),
-- not both. Raises SQLSTATE 22023 naming the parameter for a missing or malformed value.
CREATE FUNCTION siwa.submit_sign_in(
    p_team_id text, p_client_id text, p_identity_token text, p_authorization_code text,
    p_nonce text DEFAULT NULL, p_nonce_sha256 text DEFAULT NULL, p_redirect_uri text DEFAULT NULL,
    p_name text DEFAULT NULL, p_email text DEFAULT NULL, p_external_user_id text DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_key text := 'sign-in:' || coalesce(p_team_id, '') || ':' || coalesce(p_client_id, '') || ':'
                  || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD');
    v_job bigint;
    v_id bigint;
BEGIN
    IF coalesce(p_team_id, '') = '' THEN
        RAISE EXCEPTION 'siwa.submit_sign_in: p_team_id is required' USING ERRCODE = '22023';
    ELSIF coalesce(p_client_id, '') = '' THEN
        RAISE EXCEPTION 'siwa.submit_sign_in: p_client_id is required' USING ERRCODE = '22023';
    ELSIF coalesce(btrim(p_identity_token), '') = '' THEN
        RAISE EXCEPTION 'siwa.submit_sign_in: p_identity_token is required' USING ERRCODE = '22023';
    ELSIF length(p_identity_token) > 16384 THEN
        RAISE EXCEPTION 'siwa.submit_sign_in: p_identity_token is longer than 16 KiB' USING ERRCODE = '22023';
    ELSIF coalesce(btrim(p_authorization_code), '') = '' THEN
        RAISE EXCEPTION 'siwa.submit_sign_in: p_authorization_code is required' USING ERRCODE = '22023';
    ELSIF p_nonce IS NOT NULL AND p_nonce_sha256 IS NOT NULL THEN
        RAISE EXCEPTION 'siwa.submit_sign_in: give p_nonce or p_nonce_sha256, not both' USING ERRCODE = '22023';
    ELSIF p_nonce = '' THEN
        RAISE EXCEPTION 'siwa.submit_sign_in: p_nonce is empty' USING ERRCODE = '22023';
    ELSIF p_nonce_sha256 IS NOT NULL AND p_nonce_sha256 !~ '^[0-9A-Fa-f]{64}$' THEN
        RAISE EXCEPTION 'siwa.submit_sign_in: p_nonce_sha256 must be 64 hex digits' USING ERRCODE = '22023';
    ELSIF p_external_user_id = '' THEN
        RAISE EXCEPTION 'siwa.submit_sign_in: p_external_user_id is empty (omit it instead)' USING ERRCODE = '22023';
    END IF;
    -- The standing job: counted (its row lock orders this with a cancel), or planned.
    LOOP
        UPDATE siwa.jobs SET item_count = item_count + 1
        WHERE unique_key = v_key AND state IN ('running', 'paused')
        RETURNING id INTO v_job;
        EXIT WHEN v_job IS NOT NULL;
        INSERT INTO siwa.jobs (kind, spec, unique_key, created_by, priority, item_count)
        VALUES ('sign-in', jsonb_build_object('client_id', p_client_id, 'team_id', p_team_id), v_key,
                'siwa.submit_sign_in', 0, 1)
        ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ('running', 'paused') DO NOTHING
        RETURNING id INTO v_job;
        IF v_job IS NOT NULL THEN
            INSERT INTO siwa.audit_log (actor, action, job_id, detail)
            VALUES ('siwa.submit_sign_in', 'job.enqueued', v_job,
                    jsonb_build_object('kind', 'sign-in', 'team_id', p_team_id, 'client_id', p_client_id, 'priority', 0));
            EXIT;
        END IF;
    END LOOP;
    INSERT INTO siwa.sign_ins (team_id, client_id, identity_token, authorization_code, nonce, nonce_sha256, redirect_uri,
                               name, email, external_user_id, job_id)
    VALUES (p_team_id, p_client_id, btrim(p_identity_token), btrim(p_authorization_code), p_nonce, lower(p_nonce_sha256),
            nullif(p_redirect_uri, ''), nullif(p_name, ''), nullif(p_email, ''), p_external_user_id, v_job)
    RETURNING id INTO v_id;
    -- 20 attempts: transient failures are retried only while the code can still be valid (5 min
    -- after the token's iat), which ends long before the attempts do; the worker then decides.
    INSERT INTO siwa.job_items (job_id, payload, max_attempts) VALUES (v_job, jsonb_build_object('sign_in_id', v_id), 20);
    PERFORM pg_notify('siwa_jobs', 'sign-in');
    RETURN v_id;
END $$;
COMMENT ON FUNCTION siwa.submit_sign_in(text, text, text, text, text, text, text, text, text, text) IS
    'Submit a Sign in with Apple sign-in (identity token + authorization code); LISTEN siwa_sign_ins for the outcome in siwa.sign_ins.';

-- The inbox without credentials, for dashboards and apps that only read outcomes.
CREATE VIEW siwa.sign_in_outcomes AS
SELECT id, submitted_at, team_id, client_id, redirect_uri, external_user_id, job_id, identity_token_fingerprint,
       code_fingerprint, outcome,
       CASE WHEN outcome = 'identity_token_rejected' THEN outcome || ': ' || reason ELSE outcome END AS outcome_text,
       reason, detail, account_id, sub, account_email, is_private_email, real_user_status, matched_via, processed_at
FROM siwa.sign_ins;

DO $$
BEGIN
    GRANT SELECT, INSERT, UPDATE ON siwa.sign_ins TO siwa_worker;
    GRANT SELECT ON siwa.sign_in_outcomes TO siwa_worker, siwa_dashboard;
    GRANT EXECUTE ON FUNCTION siwa.submit_sign_in(text, text, text, text, text, text, text, text, text, text) TO siwa_worker;
EXCEPTION WHEN undefined_object OR insufficient_privilege THEN
    RAISE NOTICE 'grants on siwa.sign_ins skipped: the siwa roles are missing; grant them by hand';
END $$;
