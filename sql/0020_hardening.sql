-- Hardening (issue #13).
-- 1. Notification rejections store a reason code; the human-readable detail (untrusted header
--    values quoted as at most 40 printable ASCII characters) goes to a bounded column of its own.
ALTER TABLE siwa.notifications ADD COLUMN rejection_detail text
    CHECK (rejection_detail IS NULL OR char_length(rejection_detail) <= 300);

-- 2. The audit log refuses TRUNCATE too (UPDATE and DELETE are refused row by row since 0001),
--    even for the owner: removing audit history takes an explicit DROP TRIGGER first.
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON siwa.audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION siwa.audit_log_append_only();

-- 3. No reliance on PostgreSQL 15's defaults: nobody but the owner creates objects in public, and
--    the schema's functions run only for the roles granted them.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
REVOKE ALL ON SCHEMA siwa FROM PUBLIC;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA siwa FROM PUBLIC;
ALTER DEFAULT PRIVILEGES IN SCHEMA siwa REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
-- What the roles call, explicitly: trigger functions run without an EXECUTE check, but what they
-- call is checked (the partition and summary functions of 0018 run for whoever inserts a job or
-- finishes one: the worker, and the receiver when it plans).
DO $$
BEGIN
    GRANT EXECUTE ON FUNCTION siwa.ensure_job_partition(bigint), siwa.summarize_job(bigint) TO siwa_worker, siwa_receiver;
EXCEPTION WHEN undefined_object THEN
    RAISE NOTICE 'siwa roles missing: grant EXECUTE on siwa.ensure_job_partition and siwa.summarize_job by hand';
END $$;

-- 4. Personal data leaves the dashboard role: the views that show a sub, an email, a
--    transfer_sub or a token fingerprint (and credential state, looked up by sub) are read by
--    siwa_pii_reader (new; grant it to the app backend and the few people and tools that need
--    those), while siwa_dashboard keeps the counts and states.
DO $$
BEGIN
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'siwa_pii_reader') THEN
            CREATE ROLE siwa_pii_reader NOLOGIN;
        END IF;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL;   -- created meanwhile by a migration of another database
    END;
    GRANT USAGE ON SCHEMA siwa TO siwa_pii_reader;
    REVOKE SELECT ON siwa.account_summary, siwa.notification_summary, siwa.email_changes, siwa.accounts_to_delete,
        siwa.credential_states FROM siwa_dashboard;
    REVOKE EXECUTE ON FUNCTION siwa.credential_state(text, text, text) FROM siwa_dashboard;
    GRANT SELECT ON siwa.account_summary, siwa.notification_summary, siwa.email_changes, siwa.accounts_to_delete,
        siwa.credential_states TO siwa_pii_reader;
    GRANT EXECUTE ON FUNCTION siwa.credential_state(text, text, text) TO siwa_pii_reader;
    -- The sign-in inbox: its outcomes carry the sub and email; the app backend submits and reads.
    REVOKE SELECT ON siwa.sign_in_outcomes FROM siwa_dashboard;
    GRANT SELECT ON siwa.sign_in_outcomes TO siwa_pii_reader;
    GRANT EXECUTE ON FUNCTION siwa.submit_sign_in(text, text, text, text, text, text, text, text, text, text)
        TO siwa_pii_reader;
EXCEPTION WHEN insufficient_privilege OR undefined_object THEN
    RAISE NOTICE 'siwa_pii_reader not created or granted (the migrating user lacks CREATEROLE, or the siwa roles are missing); grant by hand';
END $$;
