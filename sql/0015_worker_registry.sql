-- The live worker registry (issue #9): one row per running `siwa-jobs work` or `notifications
-- serve` process, written by its heartbeat every few seconds and deleted by a clean stop. A process
-- that dies without stopping (kill -9, a lost host) leaves its row, which stops counting as live
-- once `expires_at` (its last heartbeat plus that process's own timeout) has passed, and which the
-- next heartbeat of any process deletes. Times are the database's clock (`now()`), except
-- `started_at`, which the process reports.
CREATE TABLE siwa.workers (
    worker_id     text             PRIMARY KEY,            -- host:pid:random, also its lease owner
    host          text             NOT NULL,
    pid           integer          NOT NULL,
    version       text             NOT NULL,               -- the binary's version string
    command       text             NOT NULL,               -- 'work' or 'notifications serve'
    started_at    timestamptz      NOT NULL,
    heartbeat_at  timestamptz      NOT NULL DEFAULT now(),
    expires_at    timestamptz      NOT NULL,               -- heartbeat_at + the process's timeout
    concurrency   integer          NOT NULL,               -- work: --concurrency; serve: --threads
    kinds         text[]           NOT NULL DEFAULT '{}',  -- job kinds it runs (empty for serve)
    in_flight     integer          NOT NULL DEFAULT 0,     -- items leased (serve: open connections)
    apple_rate    double precision                         -- Apple requests/s it holds; NULL: not reported
) WITH (fillfactor = 50);   -- heartbeats update in place (HOT): no index column changes

-- The live ones: what `siwa-jobs workers` lists and `doctor` compares versions with.
CREATE VIEW siwa.live_workers AS
    SELECT worker_id, host, pid, version, command, started_at, heartbeat_at, expires_at, concurrency, kinds,
           in_flight, apple_rate, extract(epoch FROM now() - heartbeat_at)::float8 AS heartbeat_age_s
    FROM siwa.workers
    WHERE expires_at > now();

DO $$
BEGIN
    GRANT SELECT, INSERT, UPDATE, DELETE ON siwa.workers TO siwa_worker, siwa_receiver;
    GRANT SELECT ON siwa.live_workers TO siwa_worker, siwa_receiver, siwa_dashboard;
EXCEPTION WHEN undefined_object OR insufficient_privilege THEN
    RAISE NOTICE 'grants on siwa.workers skipped: the siwa roles are missing; grant them by hand';
END $$;
