-- siwa.account_by_transfer_sub (0004) returned its matches in UNION ALL order, which SQL does not
-- guarantee. Same function, same result columns, now with an explicit order: the recipient's
-- migrated account first, then the sender's account, then a loaded hand-off row.
CREATE OR REPLACE FUNCTION siwa.account_by_transfer_sub(p_team_id text, p_transfer_sub text)
RETURNS TABLE (account_id bigint, external_user_id text, team_id text, client_id text, sub text,
               matched_via text, days_left integer)
LANGUAGE sql STABLE AS $$
    SELECT m.account_id, m.external_user_id, m.team_id, m.client_id, m.sub, m.matched_via, m.days_left
    FROM (
        (SELECT a.id AS account_id, a.external_user_id, a.team_id, a.client_id, a.sub, 'recipient'::text AS matched_via,
                NULL::integer AS days_left, 1 AS rank
         FROM siwa.accounts a
         WHERE a.transfer_sub = p_transfer_sub AND a.team_id = p_team_id AND a.deleted_at IS NULL
         ORDER BY a.id LIMIT 1)
        UNION ALL
        (SELECT a.id, a.external_user_id, a.team_id, a.client_id, a.sub, 'sender'::text,
                (max(t.transfer_date) + 60) - current_date, 2
         FROM siwa.transfer_subs s
         JOIN siwa.accounts a ON a.id = s.account_id
         JOIN siwa.transfer_jobs t ON t.direction = 'export' AND t.team_id = a.team_id AND t.client_id = a.client_id
                                  AND t.peer_team_id = s.target_team_id
         WHERE s.transfer_sub = p_transfer_sub AND s.target_team_id = p_team_id AND a.deleted_at IS NULL
         GROUP BY a.id
         HAVING (max(t.transfer_date) + 60) >= current_date
         ORDER BY a.id LIMIT 1)
        UNION ALL
        (SELECT NULL::bigint, r.external_user_id, i.team_id, i.client_id, NULL::text, 'import'::text,
                (i.transfer_date + 60) - current_date, 3
         FROM siwa.transfer_import_rows r
         JOIN siwa.transfer_imports i ON i.id = r.import_id
         WHERE r.transfer_sub = p_transfer_sub AND i.team_id = p_team_id AND r.state <> 'migrated'
           AND (i.transfer_date + 60) >= current_date
         ORDER BY i.id DESC LIMIT 1)
    ) m
    ORDER BY m.rank
$$;
COMMENT ON FUNCTION siwa.account_by_transfer_sub(text, text) IS
    'Sign-in during the 60-day transfer window: find the account for an identity token''s transfer_sub claim (recipient team ID, claim); recipient first, then sender, then import.';
