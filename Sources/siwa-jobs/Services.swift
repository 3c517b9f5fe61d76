import Clocks
import Foundation
import Lifecycle
import Postgres
import Queue
import Synchronization

// Adapters that put today's long-running APIs on `Lifecycle.Service`, so `work`, `notifications
// serve` and `sandbox` all run on one `ServiceGroup` (one signal source, graceful stop with a
// deadline). They shrink as the worker and the servers conform to `Service` themselves.

/// Fires once; `wait()` returns when it has fired or the waiting task is cancelled.
final class StopLatch: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self)
    }

    func fire() { continuation.finish() }

    func wait() async {
        for await _ in stream {}
    }
}

/// The worker: `run()` runs it to its report; a graceful stop is `requestStop()` (stop claiming,
/// in-flight items get the grace period, then are released).
final class WorkerService: Service {
    let worker: Worker
    private let state = Mutex<(finished: Bool, report: WorkerReport?)>((false, nil))

    init(_ worker: Worker) { self.worker = worker }

    /// The report, once `run()` has returned.
    var report: WorkerReport? { state.withLock { $0.report } }

    func run() async {
        let report = await worker.run()
        state.withLock { $0 = (true, report) }
    }

    func shutdownGracefully() {
        // After a drain returned by itself there is nothing to stop (and nothing to log).
        if !state.withLock({ $0.finished }) { worker.requestStop() }
    }
}

/// Runs `body` until a graceful stop (or the group's cancellation) cancels it: a LISTEN loop, a
/// progress line. If `body` returns early it waits for the stop, so it never ends the group.
final class LoopService: Service {
    private let body: @Sendable () async -> Void
    private let onStop: @Sendable () -> Void
    private let latch = StopLatch()
    /// The running body, and whether a stop came (possibly before `run()` started it).
    private let state = Mutex<(task: Task<Void, Never>?, stopped: Bool)>((nil, false))

    /// - Parameter onStop: called on a graceful stop, besides cancelling `body` (e.g. closing a listener).
    init(onStop: @escaping @Sendable () -> Void = {}, _ body: @escaping @Sendable () async -> Void) {
        self.body = body
        self.onStop = onStop
    }

    func run() async {
        let body = self.body
        // Owned by this service: cancelled by shutdownGracefully (or our own cancellation), awaited here.
        let running = Task { await body() }
        let stopped = state.withLock { state in
            state.task = running
            return state.stopped
        }
        if stopped { running.cancel() }
        await withTaskCancellationHandler {
            await running.value
            await latch.wait()
        } onCancel: {
            running.cancel()
        }
    }

    func shutdownGracefully() {
        onStop()
        state.withLock { state in
            state.stopped = true
            state.task?.cancel()
        }
        latch.fire()
    }
}

/// Runs `start`, waits for a graceful stop (or the group's cancellation), then runs `stop` with
/// what `start` returned, to its end in a fresh task: the stop must survive the group's
/// cancellation (a server answering its last requests, a planner's last round).
final class StopSequenceService<State: Sendable>: Service {
    private let latch = StopLatch()
    private let start: @Sendable () -> State
    private let stop: @Sendable (State) async -> Void

    init(start: @escaping @Sendable () -> State, stop: @escaping @Sendable (State) async -> Void) {
        self.start = start
        self.stop = stop
    }

    func run() async {
        let state = start()
        await latch.wait()
        let stop = self.stop
        await Task { await stop(state) }.value
    }

    func shutdownGracefully() { latch.fire() }
}

/// `work --progress`: a live line on stdout (stderr carries the logs): items done of running
/// jobs, and the rate, once a second.
enum ProgressLine {
    static func run(read: @Sendable () async throws -> (done: Int, total: Int), clock: any WallClock) async {
        let started = clock.now
        var firstDone: Int?
        while !Task.isCancelled {
            do { try await clock.sleep(for: .seconds(1)) } catch { break }
            guard let progress = try? await read() else { continue }
            if firstDone == nil { firstDone = progress.done }
            let elapsed = clock.now.timeIntervalSince(started)
            let rate = Double(progress.done - (firstDone ?? 0)) / max(elapsed - 1, 0.001)
            sayRaw(String(format: "\rprogress: %d/%d items done  %.0f items/s  %.0fs   ", progress.done, progress.total, rate, elapsed))
        }
        sayRaw("\n")
    }
}
