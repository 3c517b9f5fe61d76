import Testing
@testable import Queue

/// How a claim batch is shared: priority levels in order, max-min fair shares within a level.
@Suite struct ClaimSharesTests {
    typealias Job = ClaimShares.DueJob

    static func takes(_ jobs: [Job], batch: Int) -> [Int64: Int] {
        Dictionary(uniqueKeysWithValues: ClaimShares.split(jobs, batch: batch).map { ($0.jobID, $0.take) })
    }

    @Test func moreUrgentLevelsTakeAllTheyHaveBeforeTheNext() {
        let jobs = [Job(jobID: 1, priority: 7, due: 500), Job(jobID: 2, priority: 4, due: 30),
                    Job(jobID: 3, priority: 4, due: 5_000), Job(jobID: 4, priority: 2, due: 7)]
        #expect(Self.takes(jobs, batch: 100) == [4: 7, 2: 30, 3: 63])
        #expect(Self.takes(jobs, batch: 5_100) == [4: 7, 2: 30, 3: 5_000, 1: 63])
        #expect(Self.takes(jobs, batch: 3) == [4: 3])
    }

    @Test func equalPrioritiesShareEquallyAndASmallJobsRestGoesToTheLargerOnes() {
        #expect(Self.takes([Job(jobID: 1, priority: 4, due: 1_000), Job(jobID: 2, priority: 4, due: 1_000)], batch: 100)
                == [1: 50, 2: 50])
        // 3 cannot use its third: the rest is shared by 1 and 2, the older (lower id) getting the odd item.
        #expect(Self.takes([Job(jobID: 1, priority: 4, due: 1_000), Job(jobID: 2, priority: 4, due: 1_000),
                            Job(jobID: 3, priority: 4, due: 5)], batch: 100) == [1: 48, 2: 47, 3: 5])
        #expect(Self.takes([Job(jobID: 9, priority: 4, due: 20), Job(jobID: 5, priority: 4, due: 1_000_000)], batch: 64)
                == [9: 20, 5: 44])
    }

    @Test func theTakesFillTheBatchOrEverythingDueAndNeverMore() {
        for batch in [1, 2, 7, 64, 500] {
            for dues in [[1, 1, 1], [0, 3, 900], [10, 10, 10, 10], [499, 1, 0, 2]] {
                let jobs = dues.enumerated().map { Job(jobID: Int64($0.offset + 1), priority: $0.offset % 2, due: $0.element) }
                let shares = ClaimShares.split(jobs, batch: batch)
                #expect(shares.reduce(0) { $0 + $1.take } == min(batch, dues.reduce(0, +)), "batch \(batch), due \(dues)")
                #expect(shares.allSatisfy { share in share.take > 0 && share.take <= (jobs.first { $0.jobID == share.jobID }?.due ?? 0) })
                #expect(shares.map(\.priority) == shares.map(\.priority).sorted(), "most urgent first")
            }
        }
    }

    @Test func nothingDueOrNoBatchGivesNoShares() {
        #expect(ClaimShares.split([], batch: 100).isEmpty)
        #expect(ClaimShares.split([Job(jobID: 1, priority: 0, due: 0)], batch: 100).isEmpty)
        #expect(ClaimShares.split([Job(jobID: 1, priority: 0, due: 10)], batch: 0).isEmpty)
    }
}
