import AppleID
import Synchronization

/// The in-memory twin of `AppleID.CurlTransport` for tests: answers each request from a handler
/// (or a queue of canned results) and records every request it saw.
public final class ScriptedTransport: HTTPTransport {
    public typealias Handler = @Sendable (HTTPRequest) async throws(TransportError) -> HTTPResponse

    private let handler: Handler
    private let recorded = Mutex<[HTTPRequest]>([])

    /// Answers every request with `handler`.
    public init(_ handler: @escaping Handler) {
        self.handler = handler
    }

    /// Answers requests in order from `script`; once it is exhausted, fails with
    /// `TransportError(.other, "script exhausted")`.
    public convenience init(script: [Result<HTTPResponse, TransportError>]) {
        let queue = Mutex(script[...])
        self.init { _ throws(TransportError) in
            let next = queue.withLock { $0.popFirst() }
            guard let next else { throw TransportError(kind: .other, message: "script exhausted") }
            return try next.get()
        }
    }

    public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        recorded.withLock { $0.append(request) }
        return try await handler(request)
    }

    /// Every request sent so far, oldest first.
    public var requests: [HTTPRequest] { recorded.withLock { $0 } }
}
