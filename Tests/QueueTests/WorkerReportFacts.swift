import Queue

/// The facts of a report that `siwa-jobs work` turns into its exit status (the mapping itself is
/// the CLI's, tested in CLITests/ExitCodeTests).
extension WorkerReport {
    /// Nothing failed, was discarded, paused or left pending, and no outage stopped the run.
    var nothingWentWrong: Bool {
        pausedJobs.isEmpty && databaseFailure == nil && upstreamFailure == nil && failed == 0 && discarded == 0
            && leftPending == 0
    }

    /// No job was paused and no outage stopped the run (only items may have failed or be pending).
    var noPauseOrOutage: Bool {
        pausedJobs.isEmpty && databaseFailure == nil && upstreamFailure == nil
    }
}
