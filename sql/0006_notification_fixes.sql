-- Notification fixes: de-duplication that a forged payload cannot abuse, one effect per verified
-- jti, `stale` outcomes, one deletion row per account.
-- Applied by `siwa-jobs migrate`; never edit after it has been applied anywhere.

-- A payload is a duplicate only when the same bytes arrived before. De-duplicating on the `jti`
-- alone, read before any verification, let whoever posted a jti first (e.g. the genuine header
-- and claims with a junk signature) suppress the genuine notification.
ALTER TABLE siwa.notifications ADD COLUMN payload_sha256 bytea;
UPDATE siwa.notifications SET payload_sha256 = sha256(convert_to(payload, 'UTF8'));
ALTER TABLE siwa.notifications ALTER COLUMN payload_sha256 SET NOT NULL;
ALTER TABLE siwa.notifications DROP CONSTRAINT notifications_jti_key;
ALTER TABLE siwa.notifications ADD CONSTRAINT notifications_jti_payload_key UNIQUE (jti, payload_sha256);
COMMENT ON COLUMN siwa.notifications.outcome IS
    'applied, stale (an older email event), duplicate (jti already processed), unknown_sub, ignored, unverifiable';

-- Several payloads may now share a jti; at most one of them takes effect. When a row is processed
-- as verified and another row with its jti was already processed as verified, it changes nothing
-- and its outcome becomes `duplicate`. The advisory lock (per jti, held to commit) serialises
-- rows sharing a jti across concurrent completion statements; each statement of this function
-- sees rows committed before it ran and rows updated earlier in the same outer statement.
CREATE FUNCTION siwa.notification_once_per_jti() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    first_id bigint;
BEGIN
    IF NEW.verification = 'verified' AND NEW.jti IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('siwa.notifications.jti:' || NEW.jti, 0));
        SELECT id INTO first_id FROM siwa.notifications
        WHERE jti = NEW.jti AND id <> NEW.id AND verification = 'verified' AND processed_at IS NOT NULL
        ORDER BY id LIMIT 1;
        IF FOUND THEN
            NEW.outcome := 'duplicate';
            NEW.account_ids := NULL;
            NEW.error := 'jti already processed as notification ' || first_id;
        END IF;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER notifications_once_per_jti BEFORE UPDATE OF processed_at ON siwa.notifications
    FOR EACH ROW WHEN (OLD.processed_at IS NULL AND NEW.processed_at IS NOT NULL)
    EXECUTE FUNCTION siwa.notification_once_per_jti();

-- One deletion row per account: a second `account-delete` for the same account (another jti)
-- adds nothing. Existing extra rows are folded into the first (handled if any was handled).
UPDATE siwa.account_deletions d
SET handled_at = (SELECT min(o.handled_at) FROM siwa.account_deletions o WHERE o.account_id = d.account_id)
WHERE d.handled_at IS NULL
  AND d.id = (SELECT min(f.id) FROM siwa.account_deletions f WHERE f.account_id = d.account_id);
DELETE FROM siwa.account_deletions d
WHERE EXISTS (SELECT 1 FROM siwa.account_deletions f WHERE f.account_id = d.account_id AND f.id < d.id);
ALTER TABLE siwa.account_deletions DROP CONSTRAINT account_deletions_once;
ALTER TABLE siwa.account_deletions ADD CONSTRAINT account_deletions_one_per_account UNIQUE (account_id);

-- As in 0005, plus: a deletion row per account at most (above), and an email event older than the
-- one already applied to every account it names gets the outcome `stale` (its audit rows already
-- said `notification.stale`). Setting `outcome` does not fire the triggers on `processed_at`.
CREATE OR REPLACE FUNCTION siwa.apply_notification() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    aid bigint;
    at_time timestamptz := COALESCE(NEW.event_time, NEW.received_at);
    acct record;
    changed boolean;
    any_changed boolean := false;
BEGIN
    IF NEW.outcome IS DISTINCT FROM 'applied' OR NEW.account_ids IS NULL THEN
        INSERT INTO siwa.audit_log (actor, action, job_id, detail)
        VALUES ('notification-processing', 'notification.' || COALESCE(NEW.outcome, 'unknown'), NEW.planned_job_id,
                jsonb_build_object('notification_id', NEW.id, 'event_type', NEW.event_type, 'sub', NEW.sub,
                                   'reason', COALESCE(NEW.rejection_reason, NEW.error)));
        RETURN NULL;
    END IF;
    FOREACH aid IN ARRAY NEW.account_ids LOOP
        SELECT id, external_user_id, refresh_token_fingerprint, refresh_token_ciphertext IS NOT NULL AS has_token
        INTO acct FROM siwa.accounts WHERE id = aid FOR UPDATE;
        CONTINUE WHEN NOT FOUND;
        changed := true;
        IF NEW.event_type IN ('email-disabled', 'email-enabled') THEN
            UPDATE siwa.accounts
            SET email_forwarding = CASE NEW.event_type WHEN 'email-disabled' THEN 'disabled' ELSE 'enabled' END,
                email_forwarding_event_at = at_time,
                email = COALESCE(NEW.email, email),
                is_private_email = COALESCE(NEW.is_private_email, is_private_email),
                updated_at = now()
            WHERE id = aid AND (email_forwarding_event_at IS NULL OR email_forwarding_event_at <= at_time);
            changed := FOUND;   -- false: a newer forwarding event was applied already
        ELSIF NEW.event_type = 'consent-revoked' THEN
            UPDATE siwa.accounts
            SET consent_revoked_at = COALESCE(consent_revoked_at, at_time),
                refresh_token_ciphertext = NULL, refresh_token_key_id = NULL,
                token_status = CASE WHEN refresh_token_ciphertext IS NULL THEN token_status ELSE 'revoked' END,
                updated_at = now()
            WHERE id = aid;
        ELSIF NEW.event_type = 'account-delete' THEN
            UPDATE siwa.accounts
            SET deleted_at = COALESCE(deleted_at, at_time), email_forwarding = 'disabled',
                refresh_token_ciphertext = NULL, refresh_token_key_id = NULL,
                token_status = CASE WHEN refresh_token_ciphertext IS NULL THEN token_status ELSE 'revoked' END,
                updated_at = now()
            WHERE id = aid;
            INSERT INTO siwa.account_deletions (account_id, notification_id, external_user_id, requested_at)
            VALUES (aid, NEW.id, acct.external_user_id, at_time)
            ON CONFLICT (account_id) DO NOTHING;
        END IF;
        any_changed := any_changed OR changed;
        INSERT INTO siwa.audit_log (actor, action, job_id, account_id, detail)
        VALUES ('notification-processing',
                CASE WHEN changed THEN 'notification.' || NEW.event_type ELSE 'notification.stale' END,
                NEW.planned_job_id, aid,
                jsonb_build_object('notification_id', NEW.id, 'event_type', NEW.event_type, 'event_time', at_time,
                                   'token_dropped', NEW.event_type IN ('consent-revoked', 'account-delete') AND acct.has_token,
                                   'token_fingerprint', acct.refresh_token_fingerprint));
    END LOOP;
    IF NOT any_changed AND NEW.event_type IN ('email-disabled', 'email-enabled') THEN
        UPDATE siwa.notifications SET outcome = 'stale' WHERE id = NEW.id;
    END IF;
    RETURN NULL;
END $$;
