-- Server-to-server notifications (inbox and processing) and account deletions for the app to act on.
-- Applied by `siwa-jobs migrate`; never edit after it has been applied anywhere.

-- Event time of the notification that last set email_forwarding, so an older event that is
-- processed later never overrides a newer one.
ALTER TABLE siwa.accounts ADD COLUMN email_forwarding_event_at timestamptz;

-- Every notification POST that carried a payload, as received. The raw JWT is kept for audit and
-- re-verification; it carries no credential, but it is never shown in a view.
CREATE TABLE siwa.notifications (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    received_at       timestamptz NOT NULL DEFAULT now(),
    payload           text        NOT NULL,            -- the compact JWT, unverified at receipt
    -- The payload's `jti`, read without verification at receipt for de-duplication (NULL if it has
    -- none or cannot be read: such rows are never de-duplicated and fail verification later).
    jti               text,
    verification      text        NOT NULL DEFAULT 'pending'
                      CHECK (verification IN ('pending', 'verified', 'rejected')),
    rejection_reason  text,                            -- e.g. `expired: exp ... is ... s before ...`
    event_type        text,                            -- normalised: account-delete, consent-revoked, ...
    sub               text,
    event_time        timestamptz,                     -- `event_time` read as seconds or milliseconds
    email             text,                            -- email events only
    is_private_email  boolean,                         -- email events only; bool or "true"/"false" in the JWT
    aud               text,
    outcome           text,                            -- applied, unknown_sub, ignored, unverifiable
    account_ids       bigint[],                        -- accounts changed
    processed_at      timestamptz,
    error             text,
    planned_job_id    bigint,                          -- processing job that took the row
    CONSTRAINT notifications_jti_key UNIQUE (jti)
);
CREATE INDEX notifications_unplanned ON siwa.notifications (id) WHERE planned_job_id IS NULL;

-- Account deletions requested through Apple (`account-delete`): one row per deleted account per
-- notification, for the app to delete or anonymise its own data and then set `handled_at`.
CREATE TABLE siwa.account_deletions (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id      bigint      NOT NULL REFERENCES siwa.accounts (id),
    notification_id bigint      NOT NULL REFERENCES siwa.notifications (id),
    external_user_id text       NOT NULL,
    requested_at    timestamptz NOT NULL,              -- the event time, or receipt time
    created_at      timestamptz NOT NULL DEFAULT now(),
    handled_at      timestamptz,
    CONSTRAINT account_deletions_once UNIQUE (account_id, notification_id)
);
CREATE INDEX account_deletions_open ON siwa.account_deletions (created_at) WHERE handled_at IS NULL;

-- Applies a processed notification to its accounts, exactly once: fires only on the update that
-- sets processed_at (the processing job's completion statement, which is guarded by the item's
-- lease), in the same transaction. Every account change and every notification that changed
-- nothing gets an audit row. No token material is written anywhere: only fingerprints.
CREATE FUNCTION siwa.apply_notification() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    aid bigint;
    at_time timestamptz := COALESCE(NEW.event_time, NEW.received_at);
    acct record;
    changed boolean;
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
            ON CONFLICT (account_id, notification_id) DO NOTHING;
        END IF;
        INSERT INTO siwa.audit_log (actor, action, job_id, account_id, detail)
        VALUES ('notification-processing',
                CASE WHEN changed THEN 'notification.' || NEW.event_type ELSE 'notification.stale' END,
                NEW.planned_job_id, aid,
                jsonb_build_object('notification_id', NEW.id, 'event_type', NEW.event_type, 'event_time', at_time,
                                   'token_dropped', NEW.event_type IN ('consent-revoked', 'account-delete') AND acct.has_token,
                                   'token_fingerprint', acct.refresh_token_fingerprint));
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER notifications_apply AFTER UPDATE OF processed_at ON siwa.notifications
    FOR EACH ROW WHEN (OLD.processed_at IS NULL AND NEW.processed_at IS NOT NULL)
    EXECUTE FUNCTION siwa.apply_notification();

-- The inbox without the raw payload, for dashboards.
CREATE VIEW siwa.notification_summary AS
SELECT id, received_at, jti, verification, rejection_reason, event_type, sub, event_time, email, is_private_email, aud,
       outcome, account_ids, processed_at, error, planned_job_id
FROM siwa.notifications;

-- Deletions the app has not handled yet.
CREATE VIEW siwa.accounts_to_delete AS
SELECT d.id, d.account_id, d.external_user_id, a.team_id, a.client_id, a.sub, d.requested_at, d.created_at
FROM siwa.account_deletions d JOIN siwa.accounts a ON a.id = d.account_id
WHERE d.handled_at IS NULL;

DO $$
BEGIN
    GRANT SELECT, INSERT, UPDATE ON siwa.notifications, siwa.account_deletions TO siwa_worker;
    GRANT SELECT ON siwa.notification_summary, siwa.accounts_to_delete TO siwa_worker, siwa_dashboard;
EXCEPTION WHEN undefined_object OR insufficient_privilege THEN
    RAISE NOTICE 'grants on notification tables skipped: the siwa roles are missing; grant them by hand';
END $$;
