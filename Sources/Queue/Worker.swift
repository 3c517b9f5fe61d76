import Clocks
import Foundation
import Lifecycle
import Synchronization

/// The worker supervisor, a `Lifecycle.Service`: claims due items in batches, runs at most
/// `concurrency` of them at once in a task group, flushes completions in batches, renews leases,
/// rescues expired ones, and stops gracefully (`shutdownGracefully`): no more claims, in-flight
/// items get `shutdownGrace` to finish, then they are cancelled and released uncharged.
///
/// `run()` returns when stopped, or with `drain` when nothing is due; what the run did is then
/// `lastReport`. Every wait (poll, grace, backoff, lease renewal, flush interval) is on the
/// injected clock. A worker runs once.
public final class Worker: Service {
    public let configuration: WorkerConfiguration
    let store: any JobStore
    let handlers: [String: any JobHandler]
    let logger: Logger
    let clock: any WallClock
    let random: JitterSource
    let wakeup = Wakeup()
    /// Set by `wake()` (a NOTIFY: new, possibly urgent work): the loop claims at once, however
    /// full its ready buffer, instead of waiting for the buffer to empty to the claim threshold.
    let noticed = Atomic<Bool>(false)
    /// Signalled by `wake()` too: ends the loop's wait for a child (a claim still out, items
    /// running), so a NOTIFY is acted on at once (`mainLoop`'s notice watcher).
    let notice = Wakeup()
    let inFlight = InFlightSet()
    let flusher: Flusher
    /// Opened by `shutdownGracefully()`: no more claims; the grace period starts.
    let stopSignal = Latch()
    /// Opened when `run()`'s task is cancelled: the grace period ends at once.
    let abortSignal = Latch()
    /// Jobs this worker paused, with when the pause was committed (`distantFuture` until then).
    let pausedJobs = Mutex<[Int64: Date]>([:])
    let jobCache = Mutex<[Int64: JobRecord]>([:])
    /// Items this worker's rescues discarded (their last attempt was lost with a worker).
    let rescueDiscarded = Atomic<Int>(0)
    /// Failures in a row with no answer in between, and when claiming may resume.
    let upstream = Mutex(UpstreamState())
    private let report = Mutex<WorkerReport?>(nil)

    /// - Parameters:
    ///   - clock: now and sleep for every timed decision and wait. Default `SystemClock()`.
    ///   - random: jitter for backoff, poll and rescue spread. Default `.system`.
    public init(store: any JobStore, handlers: [any JobHandler], configuration: WorkerConfiguration, logger: Logger,
                clock: any WallClock = SystemClock(), random: JitterSource = .system) {
        self.store = store
        self.handlers = Dictionary(handlers.map { ($0.kind, $0) }, uniquingKeysWith: { first, _ in first })
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        self.random = random
        self.flusher = Flusher(
            store: store, owner: configuration.workerID,
            writes: Dictionary(handlers.map { ($0.kind, $0.writes) }, uniquingKeysWith: { first, _ in first }),
            maxItems: configuration.flushMaxItems, interval: configuration.flushInterval,
            bulkInterval: configuration.bulkFlushInterval,
            holdLimit: max(1, (configuration.effectiveMaxUnflushed - configuration.concurrency) / 2),
            closeGrace: configuration.shutdownGrace, clock: clock, inFlight: inFlight, logger: logger,
            progress: wakeup, abort: abortSignal)
    }

    /// New work may be due (a NOTIFY arrived). Safe from any thread.
    public func wake() {
        noticed.store(true, ordering: .releasing)
        wakeup.signal()
        notice.signal()
    }

    /// Graceful stop (SIGTERM/SIGINT): stop claiming, let in-flight items finish within the grace
    /// period, then cancel and release the rest. Safe from any thread; a second call is harmless.
    public func shutdownGracefully() {
        if !stopSignal.isOpen {
            logger.info("stop requested: no more claims; in-flight items get the grace period", [
                "grace_s": "\(configuration.shutdownGrace.seconds)"])
        }
        stopSignal.open()
        wakeup.signal()
    }

    /// Items this worker holds a lease on now: claimed (waiting for a slot or running) until
    /// their completions are written. Read-only, for the registry's heartbeat; safe from any thread.
    public var itemsInFlight: Int { inFlight.snapshot.count }

    /// What the last `run()` did; nil until it has returned.
    public var lastReport: WorkerReport? { report.withLock { $0 } }

    /// Runs until stopped, or with `drain` until nothing is due; never throws (failures are in
    /// `lastReport`). When the calling task is cancelled (a service group's grace period is over),
    /// the worker's own grace ends at once: in-flight items are cancelled and released, and the
    /// last completions are written, before it returns.
    public func run() async {
        // Owned here and awaited below. Not a child task, so cancelling `run()` does not cancel
        // the lease release and the last flush: it only cuts the grace period short.
        let work = Task { await self.work() }
        let result = await withTaskCancellationHandler {
            await work.value
        } onCancel: {
            self.shutdownGracefully()
            self.abortSignal.open()
        }
        report.withLock { $0 = result }
    }

    private func work() async -> WorkerReport {
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
        let flushed = flusher.result
        report.add(accepted: flushed.accepted)
        report.unwritten = flushed.unwritten
        report.superseded = flushed.superseded
        report.peakUnflushed = flusher.peakUnflushed
        report.discarded += rescueDiscarded.load(ordering: .relaxed)
        if let failure = flushed.fatal, report.databaseFailure == nil {
            report.databaseFailure = failure
        }
        await noteWorkLeft(&report)
        return report
    }

    /// A drain stopped by request (SIGTERM/SIGINT) before its work was done says what is left,
    /// so the CLI exits 75 rather than 0. Stops explained otherwise (the upstream or the
    /// database) already say so.
    private func noteWorkLeft(_ report: inout WorkerReport) async {
        guard configuration.drain, report.endedByStop, report.upstreamFailure == nil, report.databaseFailure == nil else {
            return
        }
        if abortSignal.isOpen {
            // Cancelled past the grace period: do not wait on the database again.
            report.stoppedWithWorkLeft = "cancelled after the grace period; the work left was not read"
            return
        }
        do {
            let backlog = try await store.backlog(kinds: handlers.keys.sorted())
            guard backlog.unfinished > 0 || report.unwritten > 0 else { return }
            report.stoppedWithWorkLeft = "\(backlog.unfinished) items left (\(backlog.dueNow) due, \(backlog.running) leased, "
                + "\(backlog.scheduled) scheduled)" + (report.unwritten > 0 ? ", \(report.unwritten) completions unwritten" : "")
        } catch {
            report.stoppedWithWorkLeft = "the work left could not be read: \(error)"
        }
        logger.warning("stopped before the drain was done", ["left": report.stoppedWithWorkLeft ?? ""])
    }

    var isStopping: Bool { stopSignal.isOpen }

    func isPaused(_ jobID: Int64) -> Bool { pausedJobs.withLock { $0[jobID] != nil } }

    /// Claims only return items of running jobs: a job this worker paused before the claim began
    /// has been resumed (`job resume`), so it runs again here too.
    func forgetPausesResumedBefore(_ claimStarted: Date, jobIDs: Set<Int64>) {
        pausedJobs.withLock { paused in
            for id in jobIDs where (paused[id] ?? .distantFuture) < claimStarted { paused[id] = nil }
        }
    }

    /// The poll interval, jittered ±50 % so workers do not poll in lockstep.
    func jitteredPoll() -> Duration {
        configuration.pollInterval * (0.5 + random())
    }
}
