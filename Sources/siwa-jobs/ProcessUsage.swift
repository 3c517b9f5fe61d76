import Foundation

/// CPU seconds and peak resident memory of this process (getrusage), for `work --stats`.
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
