import Testing
@testable import Queue

/// The worker's buffer of claimed items waiting for a slot: more urgent items go ahead.
@Suite struct ReadyOrderTests {
    static func ready(_ id: Int64, priority: Int) -> Worker.ReadyItem {
        Worker.ReadyItem(item: ClaimedItem(id: id, jobID: Int64(priority), accountID: nil, payload: nil, attempt: 1, maxAttempts: 5,
                                           priority: priority),
                         kind: "k", operation: { .released })
    }

    static func ids(_ items: [Worker.ReadyItem]) -> [Int64] { items.map(\.item.id) }

    @Test func urgentItemsClaimedLaterGoAheadOfBufferedBulkItems() {
        let bulk = (1...5).map { Self.ready($0, priority: 7) }
        let urgent = [Self.ready(10, priority: 2), Self.ready(11, priority: 2)]
        #expect(Self.ids(Worker.merged(bulk, urgent)) == [10, 11, 1, 2, 3, 4, 5])
    }

    @Test func equalPrioritiesKeepTheirClaimOrderAndMixedBatchesAreSorted() {
        let buffered = [Self.ready(1, priority: 2), Self.ready(2, priority: 4), Self.ready(3, priority: 7)]
        let claimed = [Self.ready(20, priority: 7), Self.ready(21, priority: 4), Self.ready(22, priority: 2), Self.ready(23, priority: 4)]
        #expect(Self.ids(Worker.merged(buffered, claimed)) == [1, 22, 2, 21, 23, 3, 20])
        #expect(Self.ids(Worker.merged(buffered, [])) == [1, 2, 3])
        #expect(Self.ids(Worker.merged([], claimed)) == [22, 21, 23, 20])
        #expect(Self.ids(Worker.merged([Self.ready(1, priority: 4)], [Self.ready(2, priority: 4)])) == [1, 2])
    }
}
