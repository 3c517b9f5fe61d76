-- A transfer job whose canary never finished (a canary item was discarded by lease rescue, which
-- bypasses the completion statement that plans the rest) must not be marked completed with the
-- rest never planned: it is held as paused with a reason naming the recovery.
CREATE FUNCTION siwa.hold_unreleased_transfer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state = 'completed' AND OLD.state <> 'completed'
       AND EXISTS (SELECT 1 FROM siwa.transfer_jobs t WHERE t.job_id = NEW.id AND t.released_at IS NULL) THEN
        NEW.state := 'paused';
        NEW.finished_at := NULL;
        NEW.paused_reason := format('transfer canary never finished (a canary item was lost or discarded), so the rest '
            || 'was not planned: check siwa-jobs transfer status --job %s, then siwa-jobs transfer release --job %s '
            || 'and siwa-jobs job resume %s', NEW.id, NEW.id, NEW.id);
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER jobs_hold_unreleased_transfer BEFORE UPDATE OF state ON siwa.jobs
    FOR EACH ROW EXECUTE FUNCTION siwa.hold_unreleased_transfer();
