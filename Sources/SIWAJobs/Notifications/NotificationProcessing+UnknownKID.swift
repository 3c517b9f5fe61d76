import AppleID
import Foundation
import Queue

/// The unknown-`kid` rule of notification processing (apple-api.md §6: keys rotate, and Apple may
/// sign with a key before every JWKS copy serves it).
///
/// A notification whose `kid` is not in the JWKS is retried, not rejected, until the JWKS has been
/// fetched at least `unknownKIDPatience` (default 10 minutes) after the notification's
/// `received_at` and still lacks the `kid`: Apple has then had that long to publish the key. Each
/// retry waits at least the cache's refetch interval (`SIWA_JWKS_REFETCH_SECONDS`, default 60 s,
/// at least 1 s), and the cache starts at most one fetch per interval for every notification of the
/// process together, so a burst of unknown kids costs one fetch per interval, not one per
/// notification. The item's last attempt is final either way, so an unknown `kid` ends
/// `unverifiable` (with how long and how often it was tried), never `discarded`. A JWKS that
/// cannot be fetched stays transient: retried, and discarded after the last attempt so
/// `enqueue notifications` plans it again.
extension NotificationProcessingHandler {
    /// The outcome of a rejected notification: final `unverifiable`, or a retry (see above).
    func rejection(_ row: StoredNotification, _ error: JWTVerificationError, item: ClaimedItem) async -> ItemOutcome {
        let id = row.id
        if error.reason == .unknownKID {
            let keys = verifier.keys
            let lastAttempt = item.attempt >= item.maxAttempts
            let waitedFor = Int(max(0, verifier.clock.now.timeIntervalSince(row.receivedAt)))
            if await keys.lastFetchError != nil {
                return retry(id, error, note: "JWKS fetch failed", wait: keys.minimumRefetchInterval)
            }
            let deadline = row.receivedAt.addingTimeInterval(unknownKIDPatience.seconds)
            let checkedAfterDeadline = await keys.lastLoadedAt.map { $0 >= deadline } ?? false
            if !lastAttempt && !checkedAfterDeadline {
                return retry(id, error, note: "kid not yet published (\(waitedFor) s after receipt; retried for "
                    + "\(Int(unknownKIDPatience.seconds)) s)", wait: keys.minimumRefetchInterval)
            }
            let why = checkedAfterDeadline ? "still unknown \(waitedFor) s after receipt" : "still unknown on the last attempt"
            let effect = NotificationEffect.rejected(id, error, note: "\(why) (attempt \(item.attempt))")
            return .failed(effect.result, audit: nil, effect: EffectPayload(effect))
        }
        let effect = NotificationEffect.rejected(id, error)
        return .failed(effect.result, audit: nil, effect: EffectPayload(effect))
    }

    private func retry(_ id: Int64, _ error: JWTVerificationError, note: String, wait: Duration) -> ItemOutcome {
        .retry(error: "\(note): \(error.detail)", retryAfter: max(.seconds(1), wait),
               result: ResultRecord(outcome: NotificationOutcome.discarded,
                                    detail: jsonObject(["notification_id": "\(id)", "reason": error.description])))
    }
}
