extension WallClock {
    /// Sleeps for `duration` on this clock, or until `wake` returns, whichever comes first; never
    /// throws (a cancelled task returns at once). `wake` must return promptly when its task is
    /// cancelled (as `Lifecycle.Latch.wait` and Queue's `Wakeup.wait` do).
    public func sleep(for duration: Duration, unless wake: @escaping @Sendable () async -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await self.sleep(for: duration) }
            group.addTask { await wake() }
            await group.next()
            group.cancelAll()
        }
    }
}
