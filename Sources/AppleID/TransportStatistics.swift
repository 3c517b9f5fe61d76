import CCurl
import Synchronization

/// What a `CurlTransport` did since it started: responses by the HTTP version they came back in
/// (`CURLINFO_HTTP_VERSION`) and connections it opened (`CURLINFO_NUM_CONNECTS`, summed), for
/// `work --stats` and the HTTP/2 benchmark. Counts only transfers that got a response.
public struct TransportStatistics: Sendable, Equatable, CustomStringConvertible {
    /// Responses over HTTP/1.0 or HTTP/1.1.
    public var http1Responses = 0
    /// Responses over HTTP/2.
    public var http2Responses = 0
    /// Responses over any other version (HTTP/3, or one libcurl did not report).
    public var otherResponses = 0
    /// New connections opened (TCP + TLS handshakes), over all transfers.
    public var connectionsOpened = 0

    public init(http1Responses: Int = 0, http2Responses: Int = 0, otherResponses: Int = 0, connectionsOpened: Int = 0) {
        self.http1Responses = http1Responses
        self.http2Responses = http2Responses
        self.otherResponses = otherResponses
        self.connectionsOpened = connectionsOpened
    }

    /// `http1_responses=N http2_responses=N other_responses=N connections_opened=N`.
    public var description: String {
        "http1_responses=\(http1Responses) http2_responses=\(http2Responses) other_responses=\(otherResponses) "
            + "connections_opened=\(connectionsOpened)"
    }
}

/// The engine's counters behind `TransportStatistics`: written by the loop thread, read by anyone.
final class TransportCounters: Sendable {
    private let http1 = Atomic<Int>(0)
    private let http2 = Atomic<Int>(0)
    private let other = Atomic<Int>(0)
    private let connections = Atomic<Int>(0)

    /// Counts one response of `curlVersion` (a `CURL_HTTP_VERSION_*` value) that needed
    /// `newConnections` new connections.
    func record(curlVersion: Int, newConnections: Int) {
        switch curlVersion {
        case Int(CURL_HTTP_VERSION_1_0), Int(CURL_HTTP_VERSION_1_1): http1.add(1, ordering: .relaxed)
        case Int(CURL_HTTP_VERSION_2_0): http2.add(1, ordering: .relaxed)
        default: other.add(1, ordering: .relaxed)
        }
        if newConnections > 0 { connections.add(newConnections, ordering: .relaxed) }
    }

    var snapshot: TransportStatistics {
        TransportStatistics(http1Responses: http1.load(ordering: .relaxed), http2Responses: http2.load(ordering: .relaxed),
                            otherResponses: other.load(ordering: .relaxed), connectionsOpened: connections.load(ordering: .relaxed))
    }
}
