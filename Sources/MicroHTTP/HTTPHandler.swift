/// How an `HTTPServer` turns a request into an `HTTPServerResult`.
public struct HTTPHandler: Sendable {
    enum Kind: Sendable {
        case inline(@Sendable (HTTPServerRequest) -> HTTPServerResult)
        case async(@Sendable (HTTPServerRequest) async -> HTTPServerResult)
    }

    let kind: Kind

    /// Runs `body` on the event-loop thread that read the request, and sends (or delays, or
    /// drops) at once. For handlers that only compute (the sandbox): no task hop, no suspension
    /// unless the result is `.delay`. `body` must not block or wait on I/O.
    public static func inline(_ body: @escaping @Sendable (HTTPServerRequest) -> HTTPServerResult) -> HTTPHandler {
        HTTPHandler(kind: .inline(body))
    }

    /// Suspends the connection and runs `body` on the Swift concurrency pool; the connection is
    /// resumed with its result. For handlers that await (a database). Requests that arrive while the
    /// server is stopping are answered `HTTPServerResponse.unavailable` without running `body`.
    public static func async(_ body: @escaping @Sendable (HTTPServerRequest) async -> HTTPServerResult) -> HTTPHandler {
        HTTPHandler(kind: .async(body))
    }
}
