extension Flusher {
    /// How many of a job's first completions are written without a hold by default: the safety
    /// stop's default window (`SafetyStopRule.defaultWindow`), which judges a job by its first results.
    static let defaultPromptFirst = 200
    /// Jobs whose first completions are counted at most; past it the counts start again (a job
    /// then gets a few more prompt writes, nothing worse).
    static let promptJobsTracked = 10_000
}

extension Flusher.State {
    /// Counts one more completion of `jobID`: true while it is among the job's first `limit`.
    mutating func isAmongFirst(of jobID: Int64, limit: Int) -> Bool {
        let seen = addedPerJob[jobID, default: 0]
        guard seen < limit else { return false }
        if addedPerJob.count >= Flusher.promptJobsTracked && seen == 0 { addedPerJob.removeAll(keepingCapacity: true) }
        addedPerJob[jobID] = seen + 1
        return true
    }
}
