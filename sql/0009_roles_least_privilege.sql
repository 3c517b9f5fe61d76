-- Roles that work (issue #8), least privilege:
-- * siwa_worker: also reads the migration record (the worker's schema preflight);
-- * siwa_receiver (new): what `siwa-jobs notifications serve` does and nothing more: it checks the
--   schema, stores notifications, and plans their processing jobs (a job row, its items, an audit
--   row). It cannot read accounts, tokens, results, or change anything else.
-- Creation tolerates a concurrent creator in another database (roles are cluster-wide) and a
-- migrating user without CREATEROLE (a notice; grant by hand), as 0003_roles.sql does.
DO $$
BEGIN
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'siwa_receiver') THEN
            CREATE ROLE siwa_receiver NOLOGIN;
        END IF;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL;   -- created meanwhile by a migration of another database
    END;
    GRANT USAGE ON SCHEMA siwa TO siwa_receiver;
    GRANT SELECT ON siwa.schema_migrations TO siwa_worker, siwa_receiver;
    -- Storing: INSERT … ON CONFLICT DO NOTHING RETURNING id.
    GRANT SELECT, INSERT ON siwa.notifications TO siwa_receiver;
    -- Planning (Enqueuer.plan + enqueueNotificationProcessing): rows taken FOR UPDATE and marked.
    GRANT UPDATE (planned_job_id) ON siwa.notifications TO siwa_receiver;
    GRANT SELECT, INSERT ON siwa.jobs TO siwa_receiver;
    GRANT UPDATE (item_count) ON siwa.jobs TO siwa_receiver;
    GRANT INSERT ON siwa.job_items, siwa.audit_log TO siwa_receiver;
EXCEPTION WHEN insufficient_privilege OR undefined_object THEN
    RAISE NOTICE 'siwa_receiver not created or granted (the migrating user lacks CREATEROLE, or the siwa roles are missing); grant by hand';
END $$;
