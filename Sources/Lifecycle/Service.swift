/// Something long-running that a `ServiceGroup` owns: the worker, the notification receiver, the
/// sandbox, a LISTEN loop, a progress line. In the spirit of swift-service-lifecycle's `Service`,
/// without task-local plumbing: the group tells a service to stop by calling
/// `shutdownGracefully()`, and cancels its task when the grace period is over.
public protocol Service: Sendable {
    /// Runs until the service is done (a drain that found nothing due) or stopped.
    ///
    /// After `shutdownGracefully()` the service stops taking new work, lets what is in flight
    /// finish and returns. When its task is cancelled (the grace period is over) it must return
    /// promptly, running any cleanup that must survive cancellation (e.g. releasing leases) in a
    /// fresh task whose value it awaits.
    /// - Throws: whatever made the service fail; the group then stops the others and rethrows.
    func run() async throws

    /// Asks the service to stop gracefully. Called at most once per signal, from any thread; must
    /// not block. The default does nothing (the service then stops only by cancellation).
    func shutdownGracefully()
}

extension Service {
    public func shutdownGracefully() {}
}
