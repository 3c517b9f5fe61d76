import Queue

/// The job kinds' default priorities on the queue's scale (`JobPriority`: 0 the most urgent … 9
/// the least), from the most urgent: what a user waits for, then what Apple told us, then what an
/// operator asked for, then the nightly bulk. The gaps leave room for `--priority` to put one job
/// between two kinds (e.g. an urgent ops retry at 3, ahead of other ops jobs but behind
/// notifications). `sql/0014_priority_claim.sql` gave jobs planned before it these defaults.
extension JobPriority {
    /// Sign-ins (`sign-in`, planned by `siwa.submit_sign_in`): a user is waiting and an
    /// authorization code lives 5 minutes.
    public static let signIn = 0
    /// `notification-processing`: Apple's server-to-server notifications (`account-delete`,
    /// `consent-revoked`, …), applied within seconds even beside a nightly validation.
    public static let notifications = 2
    /// Jobs an operator starts: revocation sweeps, transfer exports and imports (and their retries,
    /// `--retry-failed`), the no-op benchmark job.
    public static let operations = 4
    /// The nightly `refresh-validation`: bulk work with a day to finish.
    public static let nightly = 7

    /// The priority a job of `kind` gets when its enqueue names none (`operations` for a kind
    /// not listed).
    public static func `default`(forKind kind: String) -> Int {
        switch kind {
        case SignInHandler.kind: signIn
        case NotificationProcessingHandler.kind: notifications
        case RefreshValidationHandler.kind: nightly
        default: operations
        }
    }
}

extension JobPriority {
    /// `value` when it is on the scale.
    /// - Throws: `EnqueueError` naming the scale otherwise.
    static func checked(_ value: Int) throws(EnqueueError) -> Int {
        guard range.contains(value) else {
            throw EnqueueError(message: "priority \(value) is outside \(range.lowerBound)...\(range.upperBound) "
                + "(\(mostUrgent) the most urgent, \(leastUrgent) the least)")
        }
        return value
    }
}

extension Enqueuer {
    /// `priority`, or `kind`'s default when nil.
    /// - Throws: `EnqueueError` when it is outside `JobPriority.range`; nothing is written.
    static func priority(_ priority: Int?, kind: String) throws(EnqueueError) -> Int {
        try JobPriority.checked(priority ?? JobPriority.default(forKind: kind))
    }
}
