import Clocks
import Foundation

/// Runs services side by side and stops them together (cf. swift-service-lifecycle's
/// `ServiceGroup`).
///
/// - A caught signal (by default SIGTERM and SIGINT) calls `shutdownGracefully()` on every
///   service, then starts the grace period; services still running when it ends are cancelled.
///   A further signal during the grace period is passed to `onSignal` and otherwise ignored
///   (in-flight work keeps its grace period), unless `furtherSignals` is `.cancel`.
/// - A service that returns (a drain that is done) or throws ends the group the same way: the
///   others are asked to stop gracefully, then cancelled after the grace period.
/// - `run()` returns what ended the group, and rethrows the first error a service threw.
public struct ServiceGroup: Sendable {
    /// What ended a group's run.
    public enum Ending: Sendable, Equatable {
        /// A service returned by itself (e.g. a drain found nothing due), or there were none.
        case finished
        /// A signal asked for a graceful stop; the value is the signal number.
        case signalled(Int32)
    }

    public struct Configuration: Sendable {
        /// Signals that start a graceful stop. Default `[SIGTERM, SIGINT]`; empty catches none.
        public var signals: [Int32]
        /// How long services may take to return after `shutdownGracefully()` before their tasks
        /// are cancelled. Default 30 s.
        public var gracePeriod: Duration
        /// The clock that times the grace period. Default `SystemClock()`.
        public var clock: any WallClock
        /// Called on every caught signal, before services are told (e.g. to log it). Default none.
        public var onSignal: @Sendable (Int32) -> Void
        /// What a signal does once a graceful stop is under way. Default `.ignore`.
        public var furtherSignals: FurtherSignals

        public init(signals: [Int32] = [SIGTERM, SIGINT], gracePeriod: Duration = .seconds(30),
                    clock: any WallClock = SystemClock(), onSignal: @escaping @Sendable (Int32) -> Void = { _ in },
                    furtherSignals: FurtherSignals = .ignore) {
            self.signals = signals
            self.gracePeriod = gracePeriod
            self.clock = clock
            self.onSignal = onSignal
            self.furtherSignals = furtherSignals
        }
    }

    /// A signal that arrives while the group is already stopping gracefully.
    public enum FurtherSignals: Sendable, Equatable {
        /// Logged through `onSignal`, otherwise ignored: the grace period runs its course.
        case ignore
        /// Cancels every service at once (their cleanup still runs).
        case cancel
    }

    private let services: [any Service]
    private let configuration: Configuration

    public init(services: [any Service], configuration: Configuration = Configuration()) {
        self.services = services
        self.configuration = configuration
    }

    private enum Event: Sendable {
        case serviceReturned
        case serviceFailed(any Error)
        case signal(Int32)
        case graceOver
        case signalsEnded
    }

    /// Runs every service until the group ends; see the type's documentation.
    /// - Returns: `.signalled(n)` when a signal started the stop, else `.finished`.
    /// - Throws: the first error a service threw (after every service has stopped).
    public func run() async throws -> Ending {
        guard !services.isEmpty else { return .finished }
        let signals = configuration.signals.isEmpty ? nil : SignalSource(configuration.signals)
        defer { signals?.cancel() }
        let configuration = self.configuration
        let services = self.services

        return try await withThrowingTaskGroup(of: Event.self) { group in
            for service in services {
                group.addTask {
                    do {
                        try await service.run()
                        return .serviceReturned
                    } catch {
                        return .serviceFailed(error)
                    }
                }
            }
            if let signals {
                group.addTask {
                    for await signo in signals { return .signal(signo) }
                    return .signalsEnded
                }
            }

            var running = services.count
            var ending = Ending.finished
            var firstError: (any Error)?
            var stopping = false

            func beginStop() {
                guard !stopping else { return }
                stopping = true
                for service in services { service.shutdownGracefully() }
                group.addTask {
                    try? await configuration.clock.sleep(for: configuration.gracePeriod)
                    return .graceOver
                }
            }

            while running > 0, let event = try await group.next() {
                switch event {
                case .serviceReturned:
                    running -= 1
                    beginStop()
                case .serviceFailed(let error):
                    running -= 1
                    if firstError == nil, !(error is CancellationError) { firstError = error }
                    beginStop()
                case .signal(let signo):
                    configuration.onSignal(signo)
                    if stopping {
                        if configuration.furtherSignals == .cancel { group.cancelAll() }
                    } else {
                        ending = .signalled(signo)
                        beginStop()
                    }
                    if let signals, !group.isCancelled {
                        group.addTask {
                            for await signo in signals { return .signal(signo) }
                            return .signalsEnded
                        }
                    }
                case .graceOver:
                    group.cancelAll()
                case .signalsEnded:
                    break
                }
            }
            signals?.cancel()
            group.cancelAll()
            if let firstError { throw firstError }
            return ending
        }
    }
}
