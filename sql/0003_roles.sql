-- Roles: siwa_worker (DML on the tables the worker writes) and siwa_dashboard (views only,
-- no token columns). Skipped with a notice when the migrating user may not create roles.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'siwa_worker') THEN
        CREATE ROLE siwa_worker NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'siwa_dashboard') THEN
        CREATE ROLE siwa_dashboard NOLOGIN;
    END IF;
    GRANT USAGE ON SCHEMA siwa TO siwa_worker, siwa_dashboard;
    GRANT SELECT, INSERT, UPDATE ON siwa.accounts, siwa.jobs, siwa.job_items TO siwa_worker;
    GRANT SELECT, INSERT ON siwa.results, siwa.audit_log TO siwa_worker;
    GRANT SELECT ON siwa.job_progress, siwa.job_outcomes, siwa.token_health, siwa.account_summary
        TO siwa_worker, siwa_dashboard;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'siwa roles not created: the migrating user lacks CREATEROLE; grant them by hand';
END $$;
