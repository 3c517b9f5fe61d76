import Queue

/// The canary gate of the transfer kinds: the last steps of their `CompletionEffect`.
///
/// Enqueueing plans only the first `canary_size` items (payload `{"canary":true}`) and records
/// `canary_remaining` in `siwa.transfer_jobs`. Each completion statement decrements that counter
/// by the canary items it finishes (succeeded, failed or discarded). The decrement is an
/// `UPDATE ... SET n = n - k` on one row, so concurrent completion statements serialise on that
/// row and exactly one of them sees the counter reach 0. That statement plans the rest of the job
/// (`releaseInsert`, one `INSERT ... SELECT` reading step `transfer_canary`), adds the count to
/// `siwa.jobs.item_count`, writes an audit row and sends `NOTIFY siwa_jobs` so idle workers claim
/// at once. If no canary item succeeded, the rest is still planned but the job is paused with a
/// reason telling ops what to look at (`siwa-jobs job resume N` continues).
///
/// A configuration error in a canary item pauses the job through the queue (`.pauseJob`) and the
/// item goes back uncharged, so nothing beyond the canary is ever planned or called.
enum TransferCanarySQL {
    /// The gate's steps, read from `done` as `CompletionEffect` documents; they follow the kind's
    /// own steps.
    /// - Parameter releaseInsert: `INSERT INTO siwa.job_items ... SELECT ... FROM transfer_canary g
    ///   ... WHERE g.canary_remaining <= 0 ... RETURNING job_id`.
    static func gate(releaseInsert: String) -> [CompletionEffect.Step] {
        [
            .init("transfer_canary", unsafeSQL: """
                UPDATE siwa.transfer_jobs t
                SET canary_remaining = t.canary_remaining - c.n,
                    canary_succeeded = t.canary_succeeded + c.ok,
                    released_at = CASE WHEN t.canary_remaining - c.n <= 0 THEN now() ELSE t.released_at END
                FROM (SELECT d.job_id, count(*)::int AS n, (count(*) FILTER (WHERE d.state = 'succeeded'))::int AS ok
                      FROM done d JOIN siwa.job_items ci ON ci.id = d.item_id AND ci.job_id = d.job_id
                      WHERE d.state IN ('succeeded', 'failed', 'discarded') AND ci.payload->>'canary' = 'true'
                      GROUP BY d.job_id) c
                WHERE t.job_id = c.job_id AND t.canary_remaining > 0
                RETURNING t.job_id, t.team_id, t.client_id, t.peer_team_id, t.import_id, t.retry_failed, t.max_attempts,
                          t.canary_size, t.canary_remaining, t.canary_succeeded, t.canary_last_key
                """),
            .init("transfer_release", unsafeSQL: releaseInsert),
            .init("transfer_released", unsafeSQL: """
                UPDATE siwa.jobs j
                SET item_count = j.item_count + (SELECT count(*) FROM transfer_release x WHERE x.job_id = j.id),
                    state = CASE WHEN g.canary_succeeded = 0 AND j.state = 'running' THEN 'paused' ELSE j.state END,
                    paused_reason = CASE WHEN g.canary_succeeded = 0 AND j.state = 'running'
                        THEN format('transfer canary: none of the first %s items succeeded, so the job is paused before '
                            || 'the rest runs. Check the canary results (siwa-jobs transfer status --job %s; siwa.job_outcomes), '
                            || 'fix the cause, then siwa-jobs job resume %s', g.canary_size, g.job_id, g.job_id)
                        ELSE j.paused_reason END
                FROM transfer_canary g
                WHERE j.id = g.job_id AND g.canary_remaining <= 0
                RETURNING j.id, pg_notify('siwa_jobs', j.kind)
                """),
            .init("transfer_release_audit", unsafeSQL: """
                INSERT INTO siwa.audit_log (actor, action, job_id, detail)
                SELECT 'worker', CASE WHEN g.canary_succeeded = 0 THEN 'transfer.canary_failed' ELSE 'transfer.canary_passed' END,
                       g.job_id,
                       jsonb_build_object('canary_size', g.canary_size, 'canary_succeeded', g.canary_succeeded,
                                          'planned', (SELECT count(*) FROM transfer_release x WHERE x.job_id = g.job_id))
                FROM transfer_canary g
                WHERE g.canary_remaining <= 0
                """),
        ]
    }
}
