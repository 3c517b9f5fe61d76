-- A job's summary is written by `prune`, right before its rows go (issue #9's claim benchmark):
-- the trigger of 0018 summarized a job inside the statement that completed it, two scans of its
-- items and results (0.2 s for 200,000 items) in the drain's last transaction, for a summary only
-- read once the rows are pruned. `prune` now summarizes every finished job without a summary and
-- writes each dropped partition's summaries again just before detaching it, so a job retried
-- since an earlier summary is summarized as it ended.
DROP TRIGGER IF EXISTS jobs_summarize ON siwa.jobs;
DROP FUNCTION IF EXISTS siwa.jobs_summarize();
