extension Worker {
    /// Background duties until cancelled, each on its own loop so one stuck statement never
    /// holds up another (a rescue waiting on a lock on `siwa.results` must not stop lease
    /// renewal): the jittered poll tick (a fallback for missed NOTIFY), lease renewal for
    /// in-flight items every third of the lease, and rescue of expired leases.
    func maintain() async {
        let renewEvery = max(configuration.lease / 3, .milliseconds(200))
        let rescueEvery = max(configuration.lease / 2, .milliseconds(500))
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                while !Task.isCancelled {
                    try? await clock.sleep(for: jitteredPoll())
                    if Task.isCancelled { return }
                    wakeup.signal()
                }
            }
            group.addTask { [self] in
                while !Task.isCancelled {
                    try? await clock.sleep(for: renewEvery)
                    if Task.isCancelled { return }
                    await renewLeases()
                }
            }
            group.addTask { [self] in
                while !Task.isCancelled {
                    try? await clock.sleep(for: rescueEvery * (0.75 + random() / 2))
                    if Task.isCancelled { return }
                    await rescue()
                }
            }
        }
    }

    func renewLeases() async {
        let ids = inFlight.snapshot
        guard !ids.isEmpty else { return }
        do {
            let n = try await store.extendLeases(owner: configuration.workerID, itemIDs: ids,
                                                 lease: configuration.lease)
            logger.debug("leases renewed", ["items": "\(n)"])
        } catch {
            logger.warning("lease renewal failed", ["error": "\(error)"])
        }
    }

    @discardableResult
    func rescue() async -> RescueReport {
        do {
            // This worker's own leases are spared: it is alive and renews them, even while a
            // completion waits for the database (rescuing one would run its item twice).
            let report = try await store.rescueExpired(limit: 1000, sparing: configuration.workerID,
                                                       retryBudget: configuration.retryBudget)
            rescueDiscarded.add(report.discarded, ordering: .relaxed)
            if report.retried + report.discarded > 0 {
                logger.warning("expired leases rescued", ["retried": "\(report.retried)", "discarded": "\(report.discarded)"])
            }
            return report
        } catch {
            logger.warning("rescue failed", ["error": "\(error)"])
            return RescueReport(retried: 0, discarded: 0)
        }
    }
}
