import Queue

/// The safety stop's `CompletionEffect` steps (rule: `SafetyStopRule`; table `siwa.safety_stops`,
/// sql/0011_safety_stops.sql). A kind puts `counting` first, excludes `heldBack` items from its
/// own account effect, and puts `deciding` last:
///
/// - `safety_counts` adds the statement's finished items (and those that are `invalid_grant`) to
///   the counters of each job whose stop is `open` or `tripped`, appends the account ids of the
///   invalid ones to `deferred_accounts` when the kind holds them back, and judges the window once
///   the outcome is certain. The counter row is updated with `SET n = n + k`, so concurrent
///   completion statements serialise on it and exactly one of them sees the state leave `open`
///   (`decided_now`: the row's `decided_seen` is the count it set).
/// - `safety_released` (kinds that hold back) applies the held-back verdicts when the window
///   passed in this statement.
/// - `safety_paused` pauses a job whose stop tripped in this statement, with a reason saying what
///   was seen, what to check and how to resume (`siwa.safety_stop_reason`); a job already paused
///   for another reason keeps it, and gets this one added.
/// - `safety_audit` writes `job.safety_stop` or `job.safety_passed` for the decision.
///
/// Items finishing after a trip (already in flight) are still counted and held back; `job
/// resume` marks the stop `overridden` and applies them (`JobControl`), `job cancel` drops them.
enum SafetyStopSQL {
    /// The `safety_counts` step.
    /// - Parameters:
    ///   - invalid: a predicate on `done d`: the item's result is an `invalid_grant` (constant SQL).
    ///   - holdsBack: the kind's invalid verdicts wait for the window (`deferred_accounts`).
    static func counting(invalid: String, holdsBack: Bool) -> CompletionEffect.Step {
        let seen = "(s.seen + c.n)", bad = "(s.invalid + c.bad)"
        let state = """
            CASE WHEN s.state <> 'open' THEN s.state
                 WHEN \(bad) * 100 > s.threshold_percent * s.window_size THEN 'tripped'
                 WHEN (\(seen) - \(bad)) * 100 >= (100 - s.threshold_percent) * s.window_size THEN 'passed'
                 WHEN \(seen) < s.window_size THEN 'open'
                 WHEN \(bad) * 100 > s.threshold_percent * \(seen) THEN 'tripped'
                 ELSE 'passed' END
            """
        return .init("safety_counts", unsafeSQL: """
            UPDATE siwa.safety_stops s
            SET seen = \(seen), invalid = \(bad),
                deferred_accounts = \(holdsBack ? "s.deferred_accounts || c.bad_accounts" : "s.deferred_accounts"),
                state = \(state),
                decided_seen = CASE WHEN s.state = 'open' THEN \(seen) ELSE s.decided_seen END,
                decided_at = CASE WHEN s.state = 'open' AND \(state) <> 'open' THEN now() ELSE s.decided_at END
            FROM (SELECT d.job_id, count(*)::int AS n, (count(*) FILTER (WHERE \(invalid)))::int AS bad,
                         COALESCE(array_agg(d.account_id) FILTER (WHERE (\(invalid)) AND d.account_id IS NOT NULL),
                                  '{}'::bigint[]) AS bad_accounts
                  FROM done d WHERE d.state IN ('succeeded', 'failed', 'discarded')
                    -- Evaluated once (a one-time filter): once every job of the statement has
                    -- its verdict, the items are not sorted and counted at all.
                    AND EXISTS (SELECT FROM siwa.safety_stops o
                                WHERE o.job_id IN (SELECT j.job_id FROM done j) AND o.state IN ('open', 'tripped'))
                  GROUP BY d.job_id) c
            WHERE s.job_id = c.job_id AND s.state IN ('open', 'tripped')
            RETURNING s.job_id, s.state, s.seen, s.invalid, s.threshold_percent, s.window_size, s.baseline_percent,
                      s.deferred_accounts, (s.state <> 'open' AND s.decided_seen = s.seen) AS decided_now
            """)
    }

    /// A predicate on `done d` for a kind's own account effect: the item belongs to a job whose
    /// stop is still judging (or tripped), so an invalid verdict of it is held back.
    static let judging = "d.job_id IN (SELECT job_id FROM safety_counts)"

    /// The steps after the kind's own: release (when `holdsBack`), pause, audit.
    static func deciding(holdsBack: Bool) -> [CompletionEffect.Step] {
        var steps: [CompletionEffect.Step] = []
        if holdsBack {
            steps.append(.init("safety_released", unsafeSQL: """
                UPDATE siwa.accounts a SET token_status = 'invalid', token_checked_at = now(), updated_at = now()
                FROM safety_counts s
                WHERE s.decided_now AND s.state = 'passed' AND a.id = ANY(s.deferred_accounts) AND a.token_status <> 'revoked'
                RETURNING a.id
                """))
        }
        steps.append(.init("safety_paused", unsafeSQL: """
            UPDATE siwa.jobs j
            SET state = 'paused',
                paused_reason = CASE WHEN j.state = 'paused' AND j.paused_reason IS NOT NULL THEN j.paused_reason || '; and '
                                     ELSE '' END
                    || siwa.safety_stop_reason(s.job_id, s.seen, s.invalid, s.threshold_percent,
                                               \(holdsBack ? "cardinality(s.deferred_accounts)" : "0"))
            FROM safety_counts s
            WHERE j.id = s.job_id AND s.decided_now AND s.state = 'tripped' AND j.state IN ('running', 'paused')
            RETURNING j.id
            """))
        steps.append(.init("safety_audit", unsafeSQL: """
            INSERT INTO siwa.audit_log (actor, action, job_id, detail)
            SELECT 'worker', CASE WHEN s.state = 'tripped' THEN 'job.safety_stop' ELSE 'job.safety_passed' END, s.job_id,
                   jsonb_build_object('seen', s.seen, 'invalid_grant', s.invalid, 'threshold_percent', s.threshold_percent,
                                      'window', s.window_size, 'baseline_percent', s.baseline_percent,
                                      CASE WHEN s.state = 'tripped' THEN 'held_back' ELSE 'applied' END,
                                      \(holdsBack ? "cardinality(s.deferred_accounts)" : "0"))
            FROM safety_counts s
            WHERE s.decided_now
            """))
        return steps
    }
}

/// One kind's safety stop: how its results count as `invalid_grant`, and whether it holds back
/// their verdicts. The kind's effect puts `counting` first and `deciding` last; its enqueuer arms
/// the stop with `arming(_:)`.
struct SafetyStopSignal: Sendable {
    /// A predicate on `done d`: the item's result is an `invalid_grant` (constant SQL).
    let invalidItem: String
    /// A predicate on `siwa.results r`, for the client's last known rate (constant SQL).
    let invalidResult: String
    /// The kind's invalid verdicts wait for the window (`deferred_accounts`).
    let holdsBack: Bool

    var counting: CompletionEffect.Step { SafetyStopSQL.counting(invalid: invalidItem, holdsBack: holdsBack) }
    var deciding: [CompletionEffect.Step] { SafetyStopSQL.deciding(holdsBack: holdsBack) }

    func arming(_ rule: SafetyStopRule) -> SafetyStopArming {
        SafetyStopArming(rule: rule, resultIsInvalid: invalidResult)
    }
}
