import Foundation
import Testing
@testable import SIWAJobs

/// The progress meter's rate and ETA (`work --progress`, `status --watch`), on fixed times.
@Suite struct ProgressMeterTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func job(_ id: Int64 = 1, done: Int, items: Int = 1_000, createdSecondsBefore age: Double = 0, state: String = "running") -> JobListEntry {
        JobListEntry(id: id, kind: "noop", state: state, priority: 4, createdAt: start.addingTimeInterval(-age), finishedAt: nil,
                     items: items, done: done, pausedReason: nil, pruned: false)
    }

    @Test func aFreshJobsFirstSampleHasNoRateNotZero() {
        var meter = ProgressMeter()
        let first = meter.sample([job(done: 0)], at: start)
        #expect(first[0].rate == nil && first[0].etaSeconds == nil)
        #expect(ProgressMeter.line(first[0]).contains("measuring") && !ProgressMeter.line(first[0]).contains("0 items/s"))
        #expect(ProgressMeter.json(first[0]).contains(#""rate":null"#))
    }

    @Test func aHalfDoneJobsFirstSampleIsSeededFromItsAverage() {
        var meter = ProgressMeter()
        let first = meter.sample([job(done: 500, createdSecondsBefore: 100)], at: start)
        #expect(first[0].rate == 5 && first[0].etaSeconds == 100 && first[0].percent == 50)
    }

    @Test func theRateIsSmoothedAndTheETAFollowsIt() {
        var meter = ProgressMeter(smoothing: 0.5)
        _ = meter.sample([job(done: 0)], at: start)
        let second = meter.sample([job(done: 100)], at: start.addingTimeInterval(1))
        #expect(second[0].rate == 100 && second[0].etaSeconds == 9)
        let third = meter.sample([job(done: 100)], at: start.addingTimeInterval(2))
        #expect(third[0].rate == 50, "a stalled second halves the rate, not zeroes it")
        #expect(third[0].etaSeconds == 18)
        let done = meter.sample([job(done: 1_000)], at: start.addingTimeInterval(3))
        #expect(done[0].etaSeconds == nil && ProgressMeter.line(done[0]).hasSuffix("done"))
    }
}
