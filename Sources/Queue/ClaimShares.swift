/// How one claim batch is shared among the runnable jobs (`JobStore.claim`): priority first, then
/// fair shares among jobs of equal priority.
///
/// - Levels are served most urgent first (`JobPriority`: lower first). A level takes all it has
///   due, up to what the levels before it left of the batch; only the rest goes to the next level.
/// - Within a level the batch is shared max-min fairly (round-robin in effect): every job gets an
///   equal share, and what a small job cannot use is shared again among the larger ones. Any
///   remainder of one item goes to the jobs with fewer due items, then to the older (lower id).
///
/// For example a batch of 100 over jobs A (priority 2, 7 due), B and C (priority 4, 30 and 5,000
/// due) and D (priority 7): A 7, B 30, C 63, D 0. A job of 20 items beside one of 1,000,000 of the
/// same priority therefore gets half of each batch until it is done.
public enum ClaimShares {
    /// A runnable job as the claim sees it.
    public struct DueJob: Sendable, Equatable {
        public let jobID: Int64
        public let priority: Int
        /// Its items due now, counted up to the batch size (more cannot change the shares).
        public let due: Int

        public init(jobID: Int64, priority: Int, due: Int) {
            self.jobID = jobID
            self.priority = priority
            self.due = due
        }
    }

    /// One job's part of a batch.
    public struct Share: Sendable, Equatable {
        public let jobID: Int64
        public let priority: Int
        /// How many of its due items to claim (at least 1).
        public let take: Int

        public init(jobID: Int64, priority: Int, take: Int) {
            self.jobID = jobID
            self.priority = priority
            self.take = take
        }
    }

    /// The shares of a batch of `batch` items among `jobs`, most urgent first, then by job id.
    /// Their takes add up to min(`batch`, the sum of `due`); jobs with nothing due or nothing left
    /// for them are left out.
    public static func split(_ jobs: [DueJob], batch: Int) -> [Share] {
        var left = max(0, batch)
        var shares: [Share] = []
        let levels = Dictionary(grouping: jobs.filter { $0.due > 0 }, by: \.priority)
        for priority in levels.keys.sorted() where left > 0 {
            // Smallest first: each takes at most an equal part of what is left, so what a small
            // job cannot use goes to the larger ones after it.
            let level = levels[priority, default: []].sorted { ($0.due, $0.jobID) < ($1.due, $1.jobID) }
            var levelShares: [Share] = []
            for (index, job) in level.enumerated() where left > 0 {
                let waiting = level.count - index
                let take = min(job.due, (left + waiting - 1) / waiting)
                levelShares.append(Share(jobID: job.jobID, priority: priority, take: take))
                left -= take
            }
            shares += levelShares.sorted { $0.jobID < $1.jobID }
        }
        return shares
    }
}
