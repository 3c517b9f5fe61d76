import Clocks
import Foundation
import Lifecycle
import Queue
import Synchronization

/// How often a process heartbeats into the registry and when its row stops counting as live.
/// Built once at the edge (`work`/`notifications serve` flags, else `SIWA_HEARTBEAT_SECONDS` and
/// `SIWA_HEARTBEAT_TIMEOUT_SECONDS`).
public struct HeartbeatConfiguration: Sendable, Equatable {
    /// Time between two heartbeats, jittered ±10 % so processes do not beat in lockstep. Default 10 s.
    public var interval: Duration
    /// A row whose last heartbeat is older than this is not live and is deleted by the next
    /// heartbeat of any process. Default 60 s; longer than `interval`.
    public var timeout: Duration
    /// Longest wait for the clean stop's delete (a stuck database must not hold the exit; the row
    /// then expires). Default 5 s.
    public var removeDeadline: Duration

    public init(interval: Duration = .seconds(10), timeout: Duration = .seconds(60), removeDeadline: Duration = .seconds(5)) {
        self.interval = interval
        self.timeout = timeout
        self.removeDeadline = removeDeadline
    }
}

/// Keeps this process's row in the registry for exactly as long as the service it wraps runs:
/// a first heartbeat at once, then one every `interval`, each also deleting expired rows of other
/// processes; when the wrapped service has returned (a drain that is done, or a stop after its
/// grace period), the row is deleted. A heartbeat that fails is logged and retried at the next
/// interval; it never stops the wrapped service. Graceful stops are passed on to the wrapped
/// service, so the row stays (with its items in flight) while the worker drains.
public final class HeartbeatService: Service {
    private let store: any WorkerHeartbeatStore
    private let registration: WorkerRegistration
    private let configuration: HeartbeatConfiguration
    private let load: WorkerLoadSource
    private let logger: Logger
    private let clock: any WallClock
    private let inner: any Service
    /// Failed heartbeats in a row (logged on the first, and when they end).
    private let failures = Mutex(0)

    /// - Parameters:
    ///   - load: read at each heartbeat (items in flight, the Apple rate held).
    ///   - clock: times the interval.
    ///   - inner: the service whose lifetime the row follows (the worker, the receiver).
    public init(store: any WorkerHeartbeatStore, registration: WorkerRegistration, configuration: HeartbeatConfiguration,
                load: @escaping WorkerLoadSource, logger: Logger, clock: any WallClock, around inner: any Service) {
        self.store = store
        self.registration = registration
        self.configuration = configuration
        self.load = load
        self.logger = logger
        self.clock = clock
        self.inner = inner
    }

    /// Runs the wrapped service with heartbeats beside it, then deletes the row.
    /// - Throws: what the wrapped service threw (after the row is deleted).
    public func run() async throws {
        // Owned here: cancelled and awaited (bounded) once the wrapped service has returned.
        let beating = Task { await self.beatUntilCancelled() }
        var failure: (any Error)?
        do { try await inner.run() } catch { failure = error }
        beating.cancel()
        let deadline = configuration.removeDeadline.seconds
        // A fresh task, so the delete survives this task's cancellation (the group's grace is over).
        let registration = self.registration
        let store = self.store
        let removal = Task {
            do {
                // A heartbeat statement still running would re-insert the row after the delete.
                try await Deadline.run(seconds: deadline, waitingFor: "heartbeat") { await beating.value }
                try await Deadline.run(seconds: deadline, waitingFor: "database") {
                    try await store.remove(workerID: registration.workerID)
                }
                return nil as String?
            } catch {
                return "\(error)"
            }
        }
        if let problem = await removal.value {
            logger.warning("worker registry: own row not deleted; it expires with the heartbeat timeout", [
                "worker.id": registration.workerID, "error": problem,
                "timeout_s": "\(configuration.timeout.seconds)"])
        }
        if let failure { throw failure }
    }

    public func shutdownGracefully() {
        inner.shutdownGracefully()
    }

    private func beatUntilCancelled() async {
        var first = true
        while !Task.isCancelled {
            await beat(first: first)
            first = false
            let jitter = 0.9 + Double.random(in: 0...0.2)
            do { try await clock.sleep(for: configuration.interval * jitter) } catch { return }
        }
    }

    private func beat(first: Bool) async {
        do {
            let swept = try await store.beat(registration, load: load(), timeout: configuration.timeout)
            let failed = failures.withLock { n in defer { n = 0 }; return n }
            if first {
                logger.info("worker registered", ["worker.id": registration.workerID, "version": registration.version,
                                                  "heartbeat_s": "\(configuration.interval.seconds)",
                                                  "timeout_s": "\(configuration.timeout.seconds)"])
            } else if failed > 0 {
                logger.info("worker registry: heartbeats resumed", ["failed": "\(failed)"])
            }
            if swept > 0 { logger.info("worker registry: expired workers removed", ["count": "\(swept)"]) }
        } catch {
            let n = failures.withLock { n in n += 1; return n }
            if n == 1 {
                logger.warning("worker registry: heartbeat failed; retried every interval", [
                    "worker.id": registration.workerID, "error": "\(error)"])
            }
        }
    }
}
