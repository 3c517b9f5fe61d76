import Foundation
import Queue

/// Runs beside the receiver: turns newly stored notifications into processing jobs. Woken by
/// `signal()` after each stored row (bursts are coalesced: at most one planning round per
/// `batchDelaySeconds`), and every `pollSeconds` in any case, so rows stored by another receiver
/// process, or left unplanned by a failed round, are picked up.
public final class NotificationPlanner: Sendable {
    let enqueuer: Enqueuer
    let logger: Logger
    let batchDelaySeconds: Double
    let pollSeconds: Double
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    /// - Parameters:
    ///   - batchDelaySeconds: wait after a wake-up before planning, so a burst becomes one job (default 0.2 s).
    ///   - pollSeconds: planning interval without wake-ups (default 5 s).
    public init(enqueuer: Enqueuer, logger: Logger, batchDelaySeconds: Double = 0.2, pollSeconds: Double = 5) {
        self.enqueuer = enqueuer
        self.logger = logger
        self.batchDelaySeconds = batchDelaySeconds
        self.pollSeconds = pollSeconds
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// A new notification is stored. Safe from any thread.
    public func signal() {
        continuation.yield()
    }

    /// Stops `run()` after its current round.
    public func finish() {
        continuation.finish()
    }

    /// Plans until `finish()` or cancellation, then once more so nothing stored before the stop
    /// is left unplanned.
    public func run() async {
        let ticker = Task { [continuation, pollSeconds] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(pollSeconds))
                continuation.yield()
            }
        }
        for await _ in stream {
            try? await Task.sleep(for: .seconds(batchDelaySeconds))
            await planOnce()
        }
        ticker.cancel()
        await planOnce()
    }

    /// One planning round; failures are logged and retried on the next round.
    public func planOnce() async {
        do {
            if let job = try await enqueuer.enqueueNotificationProcessing(createdBy: "notifications-serve") {
                logger.info("notifications planned", ["job.id": "\(job.jobID)", "items": "\(job.items)"])
            }
        } catch {
            logger.error("planning notifications failed; will retry", ["error": String(describing: error).prefix(300).description])
        }
    }
}
