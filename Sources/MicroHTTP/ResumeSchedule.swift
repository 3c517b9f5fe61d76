import Dispatch
import Foundation

/// When each delayed connection is due to resume, on one thread of its own.
///
/// A delayed answer (the sandbox's latency) used to make a libdispatch timer source per request:
/// per request a source, a block, and two thread hops (libdispatch's timer manager, then the
/// queue's worker) before the connection was resumed; profiles of the sandbox showed that
/// scheduling cost above any handler code. Here the deadlines wait in a min-heap and one thread
/// sleeps until the earliest (a condition variable's timed wait, no leeway); when it wakes, every
/// connection then due is handed to `fire` in one call. No deadline fires early.
/// The thread ends when the schedule is released. Thread-safe.
final class ResumeSchedule: Sendable {
    private let core = Core()

    init() {
        let core = self.core
        let thread = Thread { core.run() }
        thread.name = "microhttp.resume"
        thread.start()
    }

    deinit { core.stop() }

    /// Sets what receives the tickets that are due (called once, before any `schedule`).
    func onDue(_ fire: @escaping @Sendable ([UInt64]) -> Void) {
        core.condition.lock()
        core.fire = fire
        core.condition.unlock()
    }

    /// Resumes `ticket` once `delay` has passed.
    func schedule(_ ticket: UInt64, after delay: Duration) {
        let (seconds, attoseconds) = delay.components
        let nanoseconds = UInt64(clamping: min(max(seconds, 0), 1_000_000_000)) * 1_000_000_000
            + UInt64(clamping: max(attoseconds, 0) / 1_000_000_000)
        core.schedule(Due(at: DispatchTime.now().uptimeNanoseconds + nanoseconds, ticket: ticket))
    }

    fileprivate struct Due {
        /// `DispatchTime.uptimeNanoseconds` at which to resume.
        var at: UInt64
        var ticket: UInt64
    }

    /// The heap and the thread's loop. `@unchecked Sendable`: every field is read and written with
    /// `condition` locked.
    private final class Core: @unchecked Sendable {
        let condition = NSCondition()
        var heap: [Due] = []
        var stopped = false
        var fire: (@Sendable ([UInt64]) -> Void)?
        /// The longest single wait, nanoseconds: the timed wait reads the wall clock, so a clock
        /// step can only stretch one wait this far.
        static let longestWait: UInt64 = 100_000_000

        func schedule(_ item: Due) {
            condition.lock()
            Self.push(item, into: &heap)
            // Only a new earliest deadline changes how long the thread must sleep.
            if heap[0].ticket == item.ticket { condition.signal() }
            condition.unlock()
        }

        func stop() {
            condition.lock()
            stopped = true
            condition.signal()
            condition.unlock()
        }

        func run() {
            condition.lock()
            while !stopped {
                guard let head = heap.first else {
                    condition.wait()
                    continue
                }
                let now = DispatchTime.now().uptimeNanoseconds
                if head.at > now {
                    let wait = min(head.at - now, Self.longestWait)
                    _ = condition.wait(until: Date(timeIntervalSinceNow: Double(wait) / 1e9))
                    continue
                }
                var due: [UInt64] = []
                while let first = heap.first, first.at <= now {
                    due.append(first.ticket)
                    Self.popFirst(&heap)
                }
                let fire = self.fire
                condition.unlock()
                fire?(due)
                condition.lock()
            }
            condition.unlock()
        }

        static func push(_ item: Due, into heap: inout [Due]) {
            heap.append(item)
            var child = heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard heap[child].at < heap[parent].at else { break }
                heap.swapAt(child, parent)
                child = parent
            }
        }

        static func popFirst(_ heap: inout [Due]) {
            let last = heap.removeLast()
            guard !heap.isEmpty else { return }
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < heap.count, heap[left].at < heap[smallest].at { smallest = left }
                if right < heap.count, heap[right].at < heap[smallest].at { smallest = right }
                guard smallest != parent else { return }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
    }
}
