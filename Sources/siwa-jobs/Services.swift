import Clocks
import Foundation
import Lifecycle
import Postgres
import Queue
import SIWAJobs
import Synchronization

// Small services the long-running commands compose on one `ServiceGroup` (one signal source,
// graceful stop with a deadline) beside the worker and the servers, which are services themselves.

/// The worker on the group. After its run returned by itself (a drain that is done) the group's
/// stop needs no request, and logs none.
struct WorkerService: Service {
    let worker: Worker

    func run() async { await worker.run() }

    func shutdownGracefully() {
        if worker.lastReport == nil { worker.shutdownGracefully() }
    }
}

/// Runs `body` until a graceful stop (or the group's cancellation) cancels it: a LISTEN loop, a
/// progress line. If `body` returns early it waits for the stop, so it never ends the group.
final class LoopService: Service {
    private let body: @Sendable () async -> Void
    private let onStop: @Sendable () -> Void
    private let latch = Latch()
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
        latch.open()
    }
}

/// Runs `start`, waits for a graceful stop (or the group's cancellation), then runs `stop` with
/// what `start` returned, to its end in a fresh task: the stop must survive the group's
/// cancellation (a server answering its last requests, a planner's last round).
final class StopSequenceService<State: Sendable>: Service {
    private let latch = Latch()
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

    func shutdownGracefully() { latch.open() }
}

/// `work --progress` and `status --watch`: each job's percentage, smoothed rate and ETA
/// (`ProgressMeter`) every `interval`. On a terminal the block of lines is redrawn in place; when
/// stdout is not a terminal, one JSON line per job per sample.
enum ProgressLine {
    static func run(interval: Duration = .seconds(1), read: @Sendable () async throws -> [JobListEntry], clock: any WallClock,
                    once: Bool = false) async {
        let tty = isatty(STDOUT_FILENO) == 1
        var meter = ProgressMeter()
        var drawn = 0
        var first = true
        while !Task.isCancelled {
            if !first { do { try await clock.sleep(for: interval) } catch { break } }
            first = false
            guard let jobs = try? await read() else { continue }
            let samples = meter.sample(jobs, at: clock.now)
            if tty {
                var text = drawn > 0 ? "\u{1B}[\(drawn)A" : ""
                for sample in samples { text += "\u{1B}[2K" + ProgressMeter.line(sample) + "\n" }
                if samples.isEmpty { text += "\u{1B}[2Kno running jobs\n" }
                sayRaw(text)
                drawn = max(samples.count, 1)
            } else {
                samples.forEach { say(ProgressMeter.json($0)) }
            }
            if once { break }
        }
    }
}
