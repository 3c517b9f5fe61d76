-- The queue's high-volume tables stop checking foreign keys row by row.
--
-- PostgreSQL checks a foreign key with one lookup per inserted row (a trigger and a query each),
-- so planning a 1,000,000-item job spent 28 of its 38 s checking that every item's account and
-- job exist (they were just selected from those tables, in the same transaction), and every
-- completion checked its result's account again (issue #12). Nothing deletes either: accounts are
-- soft-deleted (`deleted_at`) and a job's row outlives its items (`prune` drops partitions and
-- keeps jobs and their summaries). A kind that finds no account for an item records the item as
-- failed ("account has no stored refresh token"), never as a crash. The smaller tables keep
-- theirs (sign-ins, transfers, notifications, safety stops).
ALTER TABLE siwa.job_items DROP CONSTRAINT job_items_account_id_fkey;
ALTER TABLE siwa.job_items DROP CONSTRAINT job_items_job_id_fkey;
ALTER TABLE siwa.results DROP CONSTRAINT results_account_id_fkey;
