-- Job item partitions filled to 40%, not 50% (issue #12: PostgreSQL's CPU per item).
--
-- 0026 filled new partitions to half so that a range item's completion, which rewrites the row
-- with no indexed column changed, stays on its page as a HOT update. But a completion statement
-- finishes many items of one page in one transaction, and until it commits the page holds each
-- row twice, the old version beside the new: about 44 rows of 93 bytes at 50%, and their ~125-byte
-- finished versions, do not fit in 8 kB. One update in eight (4,960-5,040 of 40,000 in every run)
-- left its page and wrote a new key entry. At 40% a page holds about 35 rows, old and new versions
-- fit, and every completion is HOT. WAL records per item fall from 9.8 to 9.6; PostgreSQL's CPU
-- per item moved by less than the noise of an A/B (median per-round ratio 0.94 and 0.97 at C=256,
-- 1.00 at C=64, 1.03 at C=512), and the peer benchmark's ratios read 5-13% lower the same day. A
-- planned partition is about a quarter larger; drained, 8% (at 50% the rows that left their pages
-- grew it too; README "One million items").
--
-- The function that makes a partition's tables is kept under a new name; the one every caller
-- uses (`ensure_job_partition`, `prune`) makes them, then sets the item table's fill while it is
-- still empty (the 50 in the kept body is overridden before any row is written). A migration is
-- history and cannot share a body with 0026, so this wraps it rather than copying it whole. Existing partitions keep their pages: the setting applies to rows inserted from now
-- on, and the partitions made ahead of time are still empty, so the next jobs get it in full.
ALTER FUNCTION siwa.create_item_partition(bigint, bigint, text) RENAME TO create_item_partition_tables;

CREATE FUNCTION siwa.create_item_partition(p_lo bigint, p_hi bigint, p_suffix text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM siwa.create_item_partition_tables(p_lo, p_hi, p_suffix);
    EXECUTE format('ALTER TABLE siwa.%I SET (fillfactor = 40)', 'job_items_' || p_suffix);
END $$;
REVOKE EXECUTE ON FUNCTION siwa.create_item_partition(bigint, bigint, text) FROM PUBLIC;

DO $$
DECLARE
    p record;
BEGIN
    FOR p IN SELECT suffix FROM siwa.item_partitions WHERE suffix <> 'legacy' LOOP
        EXECUTE format('ALTER TABLE siwa.%I SET (fillfactor = 40)', 'job_items_' || p.suffix);
    END LOOP;
END $$;
