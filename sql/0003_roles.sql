-- Roles: siwa_worker (DML on the tables the worker writes) and siwa_dashboard (views only,
-- no token columns). Roles are cluster-wide: creation tolerates a concurrent creator in another
-- database, and is skipped with a notice when the migrating user may not create roles.
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['siwa_worker', 'siwa_dashboard'] LOOP
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            END IF;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;   -- created meanwhile by a migration of another database
        END;
    END LOOP;
    GRANT USAGE ON SCHEMA siwa TO siwa_worker, siwa_dashboard;
    GRANT SELECT, INSERT, UPDATE ON siwa.accounts, siwa.jobs, siwa.job_items TO siwa_worker;
    GRANT SELECT, INSERT ON siwa.results, siwa.audit_log TO siwa_worker;
    GRANT SELECT ON siwa.job_progress, siwa.job_outcomes, siwa.token_health, siwa.account_summary
        TO siwa_worker, siwa_dashboard;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'siwa roles not created: the migrating user lacks CREATEROLE; grant them by hand';
END $$;
