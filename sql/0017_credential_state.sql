-- Credential state from the server's side (issue #10): what Apple's
-- ASAuthorizationAppleIDProvider.getCredentialState answers on the device (authorized, revoked,
-- notFound, transferred), answered from what siwa-jobs knows, with the time that knowledge is from.
-- A stored identity token is no session (it expires about 10 minutes after issue); an app asks here.
--
-- Precedence, first match wins:
--   notFound     no account of (team, client, sub), or the account is deleted (account-delete
--                notification, or by the app);
--   transferred  the account was exported to another team (a transfer_sub was issued for it), or a
--                newer account holds its transfer_sub (it moved on again);
--   revoked      consent revoked (notification), the token revoked by a sweep, or Apple answered
--                invalid_grant to the last validation;
--   authorized   the account holds a token no check found bad: validated (reason 'validated',
--                checked_at the validation), or not yet checked since it came in (reason
--                'not validated yet', checked_at NULL);
--   notFound     an account that never held a token (reason 'no refresh token').
-- checked_at is when the answer's evidence was recorded. No token, ciphertext or fingerprint.
CREATE VIEW siwa.credential_states AS
SELECT a.id AS account_id, a.team_id, a.client_id, a.sub, a.external_user_id, s.state, s.reason, s.checked_at
FROM siwa.accounts a
LEFT JOIN LATERAL (
    SELECT t.target_team_id, t.updated_at FROM siwa.transfer_subs t
    WHERE t.account_id = a.id AND t.transfer_sub IS NOT NULL
    ORDER BY t.updated_at DESC LIMIT 1
) x ON true
LEFT JOIN LATERAL (
    SELECT n.id, n.created_at FROM siwa.accounts n
    WHERE a.transfer_sub IS NOT NULL AND n.transfer_sub = a.transfer_sub AND n.id > a.id
    ORDER BY n.id DESC LIMIT 1
) newer ON true
CROSS JOIN LATERAL (
    SELECT * FROM (VALUES
        (1, a.deleted_at IS NOT NULL, 'notFound', 'deleted', a.deleted_at),
        (2, x.target_team_id IS NOT NULL, 'transferred', 'exported to team ' || x.target_team_id, x.updated_at),
        (3, newer.id IS NOT NULL, 'transferred', 'superseded by account ' || newer.id, newer.created_at),
        (4, a.consent_revoked_at IS NOT NULL, 'revoked', 'consent revoked', a.consent_revoked_at),
        (5, a.token_status = 'revoked', 'revoked', 'revoked by a sweep', a.token_checked_at),
        (6, a.token_status = 'invalid', 'revoked', 'invalid_grant', a.token_checked_at),
        (7, a.token_status = 'valid' AND a.refresh_token_ciphertext IS NOT NULL, 'authorized', 'validated', a.token_checked_at),
        (8, a.refresh_token_ciphertext IS NOT NULL, 'authorized', 'not validated yet', NULL::timestamptz),
        (9, true, 'notFound', 'no refresh token', NULL::timestamptz)
    ) v (rank, applies, state, reason, checked_at)
    WHERE v.applies ORDER BY v.rank LIMIT 1
) s;

-- One answer for one user: always exactly one row ('notFound' / 'no account' when none matches).
CREATE FUNCTION siwa.credential_state(p_team_id text, p_client_id text, p_sub text)
RETURNS TABLE (state text, reason text, checked_at timestamptz, account_id bigint)
LANGUAGE sql STABLE AS $$
    SELECT c.state, c.reason, c.checked_at, c.account_id FROM siwa.credential_states c
    WHERE c.team_id = p_team_id AND c.client_id = p_client_id AND c.sub = p_sub
    UNION ALL
    SELECT 'notFound', 'no account', NULL::timestamptz, NULL::bigint
    WHERE NOT EXISTS (SELECT 1 FROM siwa.accounts a
                      WHERE a.team_id = p_team_id AND a.client_id = p_client_id AND a.sub = p_sub)
$$;
COMMENT ON FUNCTION siwa.credential_state(text, text, text) IS
    'The server''s answer to "is this Apple link still good?" (team ID, client ID, sub): authorized, revoked, notFound or transferred, with a reason and checked_at.';

DO $$
BEGIN
    GRANT SELECT ON siwa.credential_states TO siwa_worker, siwa_dashboard;
    GRANT EXECUTE ON FUNCTION siwa.credential_state(text, text, text) TO siwa_worker, siwa_dashboard;
EXCEPTION WHEN undefined_object OR insufficient_privilege THEN
    RAISE NOTICE 'grants on siwa.credential_states skipped: the siwa roles are missing; grant them by hand';
END $$;
