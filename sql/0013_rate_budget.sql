-- Apple's rate budget (README "Apple's rate budget"): one token bucket per team and Apple endpoint,
-- shared by every worker process of the team on every host. Workers take permits in small grants
-- (siwa.rate_budget_grant, one round trip for a fraction of a second's worth), and report each 429
-- (siwa.rate_budget_throttled): the shared rate drops multiplicatively, Retry-After pauses every
-- worker of the team until it passes, then the rate recovers additively. All instants are the
-- database's clock (clock_timestamp()), so hosts with skewed clocks still agree; answers are
-- durations. The policy constants are parameters, passed by the worker (RateBudgetPolicy in the
-- source), so the arithmetic here has one definition and tests can drive it with explicit times.

CREATE TABLE siwa.rate_budgets (
    team_id         text             NOT NULL,
    endpoint        text             NOT NULL,   -- '/auth/token', '/auth/revoke', '/auth/usermigrationinfo'
    -- The configured ceiling, requests/s, as the last worker to ask had it.
    ceiling_rps     double precision NOT NULL CHECK (ceiling_rps > 0),
    -- The shared rate, requests/s, as of rate_at (it recovers lazily, at the next grant).
    rate_rps        double precision NOT NULL CHECK (rate_rps > 0),
    rate_at         timestamptz      NOT NULL,
    -- Permits in the bucket as of refilled_at; at most one grant window's worth accumulates.
    tokens          double precision NOT NULL DEFAULT 0,
    refilled_at     timestamptz      NOT NULL,
    -- Retry-After of the last 429: no grant before it; every worker waits until it passes.
    paused_until    timestamptz,
    -- The rate that met the last 429: recovery is quick up to a fraction of it, then holds.
    limit_rps       double precision,
    last_429_at     timestamptz,
    count_429       bigint           NOT NULL DEFAULT 0,
    permits_granted bigint           NOT NULL DEFAULT 0,
    PRIMARY KEY (team_id, endpoint)
);

-- The row of (team, endpoint), created at the ceiling with one window's worth of permits if
-- missing, locked for the calling statement, with the ceiling brought to p_ceiling (a lower
-- ceiling lowers the rate at once; a higher one is reached by recovery).
CREATE FUNCTION siwa.rate_budget_row(p_team text, p_endpoint text, p_ceiling double precision,
                                     p_window_s double precision, p_now timestamptz)
RETURNS siwa.rate_budgets LANGUAGE plpgsql AS $$
DECLARE
    b siwa.rate_budgets;
BEGIN
    INSERT INTO siwa.rate_budgets (team_id, endpoint, ceiling_rps, rate_rps, rate_at, tokens, refilled_at)
    VALUES (p_team, p_endpoint, p_ceiling, p_ceiling, p_now, greatest(1, p_ceiling * p_window_s), p_now)
    ON CONFLICT (team_id, endpoint) DO NOTHING;
    SELECT * INTO STRICT b FROM siwa.rate_budgets WHERE team_id = p_team AND endpoint = p_endpoint FOR UPDATE;
    b.ceiling_rps := p_ceiling;
    b.rate_rps := least(b.rate_rps, p_ceiling);
    RETURN b;
END $$;

-- The rate at p_now: it recovers by p_recovery x ceiling per second since rate_at (never during a
-- pause), up to the ceiling; while a 429 is younger than p_hold_s, only up to p_knee x the rate
-- that met it (a rate already above that is kept, never lowered here).
CREATE FUNCTION siwa.rate_budget_recovered(b siwa.rate_budgets, p_now timestamptz, p_recovery double precision,
                                           p_knee double precision, p_hold_s double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN b.rate_rps >= c.cap THEN least(b.rate_rps, b.ceiling_rps)
                ELSE least(c.cap, b.rate_rps + p_recovery * b.ceiling_rps * greatest(0, extract(epoch FROM
                         p_now - greatest(b.rate_at, coalesce(b.paused_until, b.rate_at))))::double precision)
           END
    FROM (SELECT CASE WHEN b.limit_rps IS NOT NULL AND b.last_429_at > p_now - make_interval(secs => p_hold_s)
                      THEN least(b.ceiling_rps, greatest(1, p_knee * b.limit_rps))
                      ELSE b.ceiling_rps END AS cap) c
$$;

-- A grant of at most p_want permits for (team, endpoint), worth at most p_window_s of the rate.
-- Answers one row: permits > 0 (use them within the grant's lifetime); or permits = 0 with
-- wait_s (the bucket will hold the least grant, p_least_fraction of a window's worth, by then),
-- or with paused_s (a Retry-After is in force for that long). rate is the shared rate now.
CREATE FUNCTION siwa.rate_budget_grant(
    p_team text, p_endpoint text, p_ceiling double precision, p_want integer, p_window_s double precision,
    p_least_fraction double precision, p_recovery double precision, p_knee double precision, p_hold_s double precision,
    p_now timestamptz DEFAULT NULL)
RETURNS TABLE (permits integer, wait_s double precision, paused_s double precision, rate double precision)
LANGUAGE plpgsql AS $$
DECLARE
    now_ timestamptz := coalesce(p_now, clock_timestamp());
    b siwa.rate_budgets;
    least_take double precision;
    take integer := 0;
    waiting double precision := 0;
BEGIN
    b := siwa.rate_budget_row(p_team, p_endpoint, p_ceiling, p_window_s, now_);
    IF b.paused_until > now_ THEN
        UPDATE siwa.rate_budgets SET ceiling_rps = b.ceiling_rps, rate_rps = b.rate_rps
        WHERE team_id = p_team AND endpoint = p_endpoint;
        RETURN QUERY SELECT 0, 0::double precision, extract(epoch FROM b.paused_until - now_)::double precision, b.rate_rps;
        RETURN;
    END IF;
    b.rate_rps := siwa.rate_budget_recovered(b, now_, p_recovery, p_knee, p_hold_s);
    b.tokens := least(greatest(1, b.rate_rps * p_window_s), b.tokens + b.rate_rps * greatest(0, extract(epoch FROM
                    now_ - greatest(b.refilled_at, coalesce(b.paused_until, b.refilled_at))))::double precision);
    least_take := greatest(1, least(p_want, floor(b.rate_rps * p_window_s * p_least_fraction)));
    IF b.tokens >= least_take THEN
        take := least(p_want, floor(b.tokens))::integer;
        b.tokens := b.tokens - take;
    ELSE
        waiting := (least_take - b.tokens) / b.rate_rps;
    END IF;
    UPDATE siwa.rate_budgets
    SET ceiling_rps = b.ceiling_rps, rate_rps = b.rate_rps, rate_at = now_, tokens = b.tokens, refilled_at = now_,
        permits_granted = permits_granted + take
    WHERE team_id = p_team AND endpoint = p_endpoint;
    RETURN QUERY SELECT take, waiting, 0::double precision, b.rate_rps;
END $$;

-- A 429 for (team, endpoint): pauses every worker of the team for p_pause_s (a longer pause in
-- force is kept), empties the bucket, and, unless the 429 came during a pause (the same burst,
-- already counted), multiplies the rate by p_decrease (never below p_floor, nor above the
-- ceiling) and learns the limit: the rate that met it; but when that rate was the hold itself
-- (p_knee x the limit already learned, within p_hold_s, down to p_relearn of it) and the last
-- 429 is older than p_relearn_after_s, only p_relearn x that limit: a 429 soon after the last
-- says the hold is above the limit, one after a long quiet spell is more likely a passing burst,
-- and such 429s must not ratchet the limit down 10% each.
-- Answers the new rate, the pause in force and whether this 429 lowered the rate.
CREATE FUNCTION siwa.rate_budget_throttled(
    p_team text, p_endpoint text, p_ceiling double precision, p_pause_s double precision, p_decrease double precision,
    p_floor double precision, p_window_s double precision, p_recovery double precision, p_knee double precision,
    p_hold_s double precision, p_relearn double precision, p_relearn_after_s double precision,
    p_now timestamptz DEFAULT NULL)
RETURNS TABLE (rate double precision, paused_s double precision, decreased boolean)
LANGUAGE plpgsql AS $$
DECLARE
    now_ timestamptz := coalesce(p_now, clock_timestamp());
    b siwa.rate_budgets;
    lowered boolean := false;
BEGIN
    b := siwa.rate_budget_row(p_team, p_endpoint, p_ceiling, p_window_s, now_);
    IF b.paused_until IS NULL OR b.paused_until <= now_ THEN
        b.rate_rps := siwa.rate_budget_recovered(b, now_, p_recovery, p_knee, p_hold_s);
        b.limit_rps := CASE WHEN b.limit_rps IS NULL OR b.last_429_at <= now_ - make_interval(secs => p_hold_s)
                                 OR b.rate_rps > p_knee * b.limit_rps * 1.001                -- above the hold
                                 OR b.rate_rps < p_knee * b.limit_rps * p_relearn            -- well under it
                                 OR b.last_429_at > now_ - make_interval(secs => p_relearn_after_s)   -- soon again
                            THEN b.rate_rps
                            ELSE greatest(b.rate_rps, p_relearn * b.limit_rps) END;
        b.rate_rps := least(b.ceiling_rps, greatest(p_floor, b.rate_rps * p_decrease));
        lowered := true;
    END IF;
    b.paused_until := greatest(coalesce(b.paused_until, now_), now_ + make_interval(secs => greatest(0, p_pause_s)));
    UPDATE siwa.rate_budgets
    SET ceiling_rps = b.ceiling_rps, rate_rps = b.rate_rps, rate_at = now_, tokens = 0, refilled_at = now_,
        paused_until = b.paused_until, limit_rps = b.limit_rps, last_429_at = now_, count_429 = count_429 + 1
    WHERE team_id = p_team AND endpoint = p_endpoint;
    RETURN QUERY SELECT b.rate_rps, extract(epoch FROM b.paused_until - now_)::double precision, lowered;
END $$;

-- What dashboards see: per team and endpoint, the ceiling, the shared rate (as of rate_as_of: it
-- recovers at the next grant), the rate that met the last 429, the pause in force and the 429s.
CREATE VIEW siwa.rate_budgets_status AS
SELECT team_id, endpoint, ceiling_rps,
       round(rate_rps::numeric, 1) AS rate_rps, rate_at AS rate_as_of,
       round(limit_rps::numeric, 1) AS learned_limit_rps,
       paused_until, coalesce(paused_until > now(), false) AS paused,
       last_429_at, count_429, permits_granted
FROM siwa.rate_budgets;

DO $$
BEGIN
    GRANT SELECT, INSERT, UPDATE ON siwa.rate_budgets TO siwa_worker;
    GRANT EXECUTE ON FUNCTION
        siwa.rate_budget_row(text, text, double precision, double precision, timestamptz),
        siwa.rate_budget_recovered(siwa.rate_budgets, timestamptz, double precision, double precision, double precision),
        siwa.rate_budget_grant(text, text, double precision, integer, double precision, double precision,
                               double precision, double precision, double precision, timestamptz),
        siwa.rate_budget_throttled(text, text, double precision, double precision, double precision, double precision,
                                   double precision, double precision, double precision, double precision, double precision,
                                   double precision, timestamptz)
        TO siwa_worker;
    GRANT SELECT ON siwa.rate_budgets_status TO siwa_worker, siwa_dashboard;
EXCEPTION WHEN undefined_object OR insufficient_privilege THEN
    RAISE NOTICE 'grants on siwa.rate_budgets skipped: the siwa roles are missing; grant them by hand';
END $$;
