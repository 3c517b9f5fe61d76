-- The sign-in exchange takes an account's id from the accounts' sequence before it writes the
-- account (issue #10): its refresh token is sealed with the id as associated data, so the account,
-- its token and the sign-in's outcome go in one statement. The worker role may take ids.
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'siwa_worker') THEN
        EXECUTE format('GRANT USAGE ON SEQUENCE %s TO siwa_worker', pg_get_serial_sequence('siwa.accounts', 'id'));
    END IF;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'siwa_worker may not take account ids: grant USAGE on the accounts sequence by hand';
END $$;
