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

-- 4. Personal data leaves the dashboard role: the views that show a sub, an email, a
--    transfer_sub or a token fingerprint are read by siwa_pii_reader (new; grant it to the few
--    people and tools that need those), while siwa_dashboard keeps the counts and states.
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
    REVOKE SELECT ON siwa.account_summary, siwa.notification_summary, siwa.email_changes, siwa.accounts_to_delete
        FROM siwa_dashboard;
    GRANT SELECT ON siwa.account_summary, siwa.notification_summary, siwa.email_changes, siwa.accounts_to_delete
        TO siwa_pii_reader;
EXCEPTION WHEN insufficient_privilege OR undefined_object THEN
    RAISE NOTICE 'siwa_pii_reader not created or granted (the migrating user lacks CREATEROLE, or the siwa roles are missing); grant by hand';
END $$;
