import Foundation
import Synchronization

/// The worker supervisor: claims due items in batches, runs at most `concurrency` of them at once
/// in a task group, flushes completions in batches, renews leases, rescues expired ones, and stops
/// gracefully (`requestStop`): no more claims, in-flight items get `shutdownGraceSeconds` to
/// finish, then they are cancelled and released uncharged.
public final class Worker: Sendable {
    public let configuration: WorkerConfiguration
    let store: any JobStore
    let handlers: [String: any JobHandler]
    let logger: Logger
    let wakeup = Wakeup()
    let inFlight = InFlightSet()
    let flusher: Flusher
    let stopSignal = StopSignal()
    /// Jobs this worker paused, with when the pause was committed (`distantFuture` until then).
    let pausedJobs = Mutex<[Int64: Date]>([:])
    let jobCache = Mutex<[Int64: JobRecord]>([:])
    /// Items this worker's rescues discarded (their last attempt was lost with a worker).
    let rescueDiscarded = Atomic<Int>(0)
    /// Transient failures in a row with no success in between, and when claiming may resume.
    let upstream = Mutex<(consecutiveTransient: Int, coolDownUntil: Date?)>((0, nil))
    let random: @Sendable () -> Double

    /// - Parameters:
    ///   - random: uniform in 0..<1, for backoff and poll jitter (injected in tests).
    public init(store: any JobStore, handlers: [any JobHandler], configuration: WorkerConfiguration, logger: Logger,
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.store = store
        self.handlers = Dictionary(handlers.map { ($0.kind, $0) }, uniquingKeysWith: { first, _ in first })
        self.configuration = configuration
        self.logger = logger
        self.random = random
        self.flusher = Flusher(
            store: store, owner: configuration.workerID,
            effects: Dictionary(handlers.map { ($0.kind, $0.effectSQL) }, uniquingKeysWith: { first, _ in first }),
            maxItems: configuration.flushMaxItems, intervalMilliseconds: configuration.flushIntervalMilliseconds,
            inFlight: inFlight, logger: logger)
    }

    /// New work may be due (a NOTIFY arrived). Safe from any thread.
    public func wake() {
        wakeup.signal()
    }

    /// Graceful stop (SIGTERM/SIGINT): stop claiming, let in-flight items finish within the grace
    /// period, then cancel and release the rest. Safe from any thread; a second call is harmless.
    public func requestStop() {
        if !stopSignal.isFired {
            logger.info("stop requested: no more claims; in-flight items get the grace period", [
                "grace_s": "\(configuration.shutdownGraceSeconds)"])
        }
        stopSignal.fire()
        wakeup.signal()
    }

    /// Runs until stopped, or with `drain` until nothing is due. Never throws: failures are in the report.
    public func run() async -> WorkerReport {
        logger.info("worker started", [
            "worker.id": configuration.workerID, "concurrency": "\(configuration.concurrency)",
            "kinds": handlers.keys.sorted().joined(separator: ","), "drain": "\(configuration.drain)",
        ])
        async let flushing: Void = flusher.run()
        let maintenance = Task { await self.maintain() }   // owned here: cancelled and awaited below
        var report = await mainLoop()
        flusher.close()
        await flushing
        maintenance.cancel()
        await maintenance.value
        report.discarded += rescueDiscarded.load(ordering: .relaxed)
        if let failure = flusher.lastFailure, report.databaseFailure == nil {
            report.databaseFailure = failure
        }
        logger.info("worker stopped", [
            "worker.id": configuration.workerID, "succeeded": "\(report.succeeded)", "failed": "\(report.failed)",
            "discarded": "\(report.discarded)",
            "retried": "\(report.retried)", "released": "\(report.released)",
            "paused_jobs": "\(report.pausedJobs.count)", "left_pending": "\(report.leftPending)",
            "database_failure": "\(report.databaseFailure != nil)", "upstream_failure": "\(report.upstreamFailure != nil)",
        ])
        return report
    }

    var isStopping: Bool { stopSignal.isFired }

    func isPaused(_ jobID: Int64) -> Bool { pausedJobs.withLock { $0[jobID] != nil } }

    /// Claims only return items of running jobs: a job this worker paused before the claim began
    /// has been resumed (`job resume`), so it runs again here too.
    func forgetPausesResumedBefore(_ claimStarted: Date, jobIDs: Set<Int64>) {
        pausedJobs.withLock { paused in
            for id in jobIDs where (paused[id] ?? .distantFuture) < claimStarted { paused[id] = nil }
        }
    }

    /// Poll delay in seconds, jittered ±50 % so workers do not poll in lockstep.
    func jitteredPoll() -> Double {
        configuration.pollSeconds * (0.5 + random())
    }
}
