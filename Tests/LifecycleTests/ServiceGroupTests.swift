import Clocks
import Foundation
import Lifecycle
import Synchronization
import Testing
import TestSupport

/// A service that runs until told to stop: gracefully (it then takes `drainTime` of work, on the
/// given clock, before returning) or by cancellation. It records what happened to it.
private final class RecordingService: Service, Sendable {
    enum Ending: Equatable { case graceful, cancelled }
    private let stop = Latch()
    private let clock: any WallClock
    private let drainTime: Duration
    private let state = Mutex<(shutdowns: Int, ending: Ending?)>((0, nil))
    let started = Latch()

    init(clock: any WallClock, drainTime: Duration = .zero) {
        self.clock = clock
        self.drainTime = drainTime
    }

    var shutdowns: Int { state.withLock { $0.shutdowns } }
    var ending: Ending? { state.withLock { $0.ending } }

    func run() async throws {
        started.open()
        await stop.wait()
        do {
            if drainTime > .zero { try await clock.sleep(for: drainTime) }
            try Task.checkCancellation()
            state.withLock { $0.ending = .graceful }
        } catch {
            state.withLock { $0.ending = .cancelled }
        }
    }

    func shutdownGracefully() {
        state.withLock { $0.shutdowns += 1 }
        stop.open()
    }
}

private struct ReturningService: Service {
    func run() async throws {}
}

private struct FailingService: Service {
    struct Boom: Error, Equatable {}
    func run() async throws { throw Boom() }
}

/// Sends `signo` to this process every 20 ms until `condition` holds (a dispatch signal source is
/// armed asynchronously after the group starts, so a first signal sent at once may find none yet).
private func signal(_ signo: Int32, until what: String, _ condition: () -> Bool) async throws {
    for _ in 0..<250 where !condition() {
        kill(getpid(), signo)
        try await Task.sleep(for: .milliseconds(20))
    }
    #expect(condition(), "timed out waiting for \(what)")
}

@Suite(.serialized, .timeLimit(.minutes(5))) struct ServiceGroupTests {
    @Test func aServiceThatReturnsStopsTheOthersGracefully() async throws {
        let clock = ManualClock()
        let other = RecordingService(clock: clock)
        let group = ServiceGroup(services: [ReturningService(), other], configuration: .init(signals: [], clock: clock))
        #expect(try await group.run() == .finished)
        #expect(other.shutdowns == 1)
        #expect(other.ending == .graceful)
    }

    @Test func aFailingServiceStopsTheOthersAndItsErrorIsRethrown() async throws {
        let clock = ManualClock()
        let other = RecordingService(clock: clock)
        let group = ServiceGroup(services: [other, FailingService()], configuration: .init(signals: [], clock: clock))
        await #expect(throws: FailingService.Boom.self) { _ = try await group.run() }
        #expect(other.ending == .graceful)
    }

    @Test func aSignalStopsEveryServiceGracefullyAndIsReported() async throws {
        let clock = ManualClock()
        let a = RecordingService(clock: clock), b = RecordingService(clock: clock)
        let group = ServiceGroup(services: [a, b], configuration: .init(signals: [SIGUSR1], clock: clock))
        let run = Task { try await group.run() }
        await a.started.wait()
        await b.started.wait()
        try await signal(SIGUSR1, until: "both services told to stop") { a.shutdowns == 1 && b.shutdowns == 1 }
        #expect(try await run.value == .signalled(SIGUSR1))
        #expect(a.ending == .graceful && b.ending == .graceful)
    }

    @Test func servicesStillRunningAfterTheGracePeriodAreCancelled() async throws {
        let clock = ManualClock()
        let slow = RecordingService(clock: clock, drainTime: .seconds(100))
        let group = ServiceGroup(services: [slow], configuration: .init(signals: [SIGUSR1], gracePeriod: .seconds(10), clock: clock))
        let run = Task { try await group.run() }
        await slow.started.wait()
        // The service's drain and the group's grace period are both asleep on the manual clock.
        try await signal(SIGUSR1, until: "the drain and the grace period to sleep") { clock.sleeperCount == 2 }
        clock.advance(by: .seconds(10))
        #expect(try await run.value == .signalled(SIGUSR1))
        #expect(slow.ending == .cancelled, "cut off at the grace period, not at the end of its 100 s drain")
    }

    @Test func aFurtherSignalIsIgnoredByDefaultSoInFlightWorkKeepsItsGrace() async throws {
        let clock = ManualClock()
        let slow = RecordingService(clock: clock, drainTime: .seconds(5))
        let seen = Mutex<[Int32]>([])
        let group = ServiceGroup(services: [slow], configuration: .init(
            signals: [SIGUSR1, SIGUSR2], gracePeriod: .seconds(30), clock: clock,
            onSignal: { signo in seen.withLock { $0.append(signo) } }))
        let run = Task { try await group.run() }
        await slow.started.wait()
        try await signal(SIGUSR1, until: "the drain and the grace period to sleep") { clock.sleeperCount == 2 }
        try await signal(SIGUSR2, until: "the second signal to be seen") { seen.withLock { $0.contains(SIGUSR2) } }
        #expect(slow.ending == nil, "still draining after the second signal")
        clock.advance(by: .seconds(5))
        #expect(try await run.value == .signalled(SIGUSR1))
        #expect(slow.ending == .graceful)
        #expect(slow.shutdowns == 1, "a further signal does not ask again")
    }

    @Test func withCancelAFurtherSignalCancelsAtOnce() async throws {
        let clock = ManualClock()
        let slow = RecordingService(clock: clock, drainTime: .seconds(5))
        let seen = Mutex<[Int32]>([])
        let group = ServiceGroup(services: [slow], configuration: .init(
            signals: [SIGUSR1, SIGUSR2], gracePeriod: .seconds(30), clock: clock,
            onSignal: { signo in seen.withLock { $0.append(signo) } }, furtherSignals: .cancel))
        let run = Task { try await group.run() }
        await slow.started.wait()
        // Repeated only until the group has seen one: a second SIGUSR1 would itself cancel.
        try await signal(SIGUSR1, until: "the first signal to be seen") { !seen.withLock { $0 }.isEmpty }
        #expect(seen.withLock { $0 } == [SIGUSR1], "exactly one signal before the further one")
        kill(getpid(), SIGUSR2)
        #expect(try await run.value == .signalled(SIGUSR1))
        #expect(slow.ending == .cancelled, "cancelled by the further signal, not after its 5 s drain")
    }
}
