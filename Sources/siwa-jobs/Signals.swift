import Dispatch
import Foundation

/// Turns SIGTERM and SIGINT into calls of `handler` (on a private queue, never the main actor).
/// The sources live for the process; the returned value keeps them alive.
final class SignalTrap: @unchecked Sendable {   // sources are set once in init; DispatchSource is thread-safe
    private let sources: [any DispatchSourceSignal]

    init(signals: [Int32] = [SIGTERM, SIGINT], handler: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "siwa-jobs.signals")
        var sources: [any DispatchSourceSignal] = []
        for signo in signals {
            signal(signo, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signo, queue: queue)
            source.setEventHandler { @Sendable in handler(signo) }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    func cancel() {
        sources.forEach { $0.cancel() }
    }
}

/// CPU seconds and peak resident memory of this process (getrusage), for `--stats`.
struct ProcessUsage {
    let userSeconds: Double
    let systemSeconds: Double
    /// Peak RSS in megabytes (10^6 bytes).
    let peakRSSMegabytes: Double

    static func current() -> ProcessUsage {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1_000_000 }
        return ProcessUsage(userSeconds: seconds(usage.ru_utime), systemSeconds: seconds(usage.ru_stime),
                            peakRSSMegabytes: Double(usage.ru_maxrss) * 1024 / 1_000_000)
    }
}
