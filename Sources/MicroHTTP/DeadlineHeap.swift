/// Suspended connections waiting for an instant, earliest first (a binary min-heap).
///
/// An event loop keeps one: a delayed answer is pushed when its connection is suspended, and the
/// loop pops every entry that is due each time it wakes, and sleeps until the earliest otherwise.
struct DeadlineHeap {
    struct Entry {
        /// `DispatchTime.uptimeNanoseconds` at which the connection is resumed.
        var at: UInt64
        var connection: ConnectionHandle
    }

    private(set) var entries: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }

    /// The earliest instant, nanoseconds of uptime; nil when empty.
    var earliest: UInt64? { entries.first?.at }

    mutating func push(_ entry: Entry) {
        entries.append(entry)
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].at < entries[parent].at else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes every entry due at `now` (nanoseconds of uptime) and appends its connection to `due`.
    mutating func popDue(at now: UInt64, into due: inout [ConnectionHandle]) {
        while let first = entries.first, first.at <= now {
            due.append(first.connection)
            popFirst()
        }
    }

    /// Removes every entry, appending its connection to `all`.
    mutating func removeAll(into all: inout [ConnectionHandle]) {
        all.append(contentsOf: entries.map(\.connection))
        entries.removeAll()
    }

    private mutating func popFirst() {
        let last = entries.removeLast()
        guard !entries.isEmpty else { return }
        entries[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < entries.count, entries[left].at < entries[smallest].at { smallest = left }
            if right < entries.count, entries[right].at < entries[smallest].at { smallest = right }
            guard smallest != parent else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
