import AppleID
import Metrics

/// Apple calls by endpoint and status, and their latency, counted lock-free: a fixed table of
/// atomic counters (endpoint × status) and one `LatencyHistogram` per endpoint, so a call costs a
/// few relaxed atomic adds and no lock. Labels are the endpoint's last path segment and the HTTP
/// status (or the transport failure's kind): never a URL query, a body, a header or a token.
public final class AppleCallMetrics: Sendable {
    /// `token` (`/auth/token`), `revoke`, `keys`, `usermigrationinfo`, or `other`.
    public static let endpoints = ["token", "revoke", "keys", "usermigrationinfo", "other"]
    /// HTTP statuses counted by value; any other is `other`. Calls without a response count under
    /// the transport failure: `timeout`, `connection_failed`, `connection_reset`, `certificate`
    /// (the server's TLS certificate refused), `cancelled`, `error`.
    public static let statuses = ["200", "400", "401", "403", "404", "429", "500", "502", "503", "504", "other",
                                  "timeout", "connection_failed", "connection_reset", "certificate", "cancelled", "error"]

    private static let otherStatus = statuses.firstIndex(of: "other") ?? 0

    private let counters: [[AtomicCounter]]
    private let latency: [LatencyHistogram]

    public init() {
        counters = Self.endpoints.map { _ in Self.statuses.map { _ in AtomicCounter() } }
        latency = Self.endpoints.map { _ in LatencyHistogram() }
    }

    /// `transport`, counting every call it sends here.
    public func instrument(_ transport: any HTTPTransport) -> any HTTPTransport {
        InstrumentedTransport(base: transport, metrics: self)
    }

    /// Records one call to `url` that ended with `status` (an HTTP status or a transport failure)
    /// after `elapsed`.
    func record(url: String, status: String, elapsed: Duration) {
        record(url: url, statusIndex: Self.statuses.firstIndex(of: status) ?? Self.otherStatus, elapsed: elapsed)
    }

    /// `record(url:status:elapsed:)` for an HTTP status, without making its text (every call).
    func record(url: String, httpStatus: Int, elapsed: Duration) {
        record(url: url, statusIndex: Self.statusIndex(httpStatus), elapsed: elapsed)
    }

    private func record(url: String, statusIndex s: Int, elapsed: Duration) {
        let e = Self.endpointIndex(url)
        counters[e][s].increment()
        latency[e].observe(elapsed)
    }

    /// The position in `statuses` of an HTTP status counted by value, else of `other`.
    static func statusIndex(_ status: Int) -> Int {
        switch status {
        case 200: 0
        case 400: 1
        case 401: 2
        case 403: 3
        case 404: 4
        case 429: 5
        case 500: 6
        case 502: 7
        case 503: 8
        case 504: 9
        default: otherStatus
        }
    }

    /// Calls so far to `endpoint` with `status`.
    public func calls(endpoint: String, status: String) -> Int {
        guard let e = Self.endpoints.firstIndex(of: endpoint), let s = Self.statuses.firstIndex(of: status) else { return 0 }
        return counters[e][s].value
    }

    /// Calls so far to every endpoint, whatever their status.
    public var totalCalls: Int { counters.reduce(0) { $0 + $1.reduce(0) { $0 + $1.value } } }

    /// `siwa_apple_calls_total{endpoint,status}` (non-zero rows only) and
    /// `siwa_apple_call_duration_seconds` (endpoints that were called).
    public var families: [MetricFamily] {
        var calls = MetricFamily("siwa_apple_calls_total", .counter, help: "Apple calls by endpoint and HTTP status (or transport failure)")
        var duration = MetricFamily("siwa_apple_call_duration_seconds", .histogram,
                                    help: "Apple call latency, seconds, from send to the whole response")
        for (e, endpoint) in Self.endpoints.enumerated() {
            for (s, status) in Self.statuses.enumerated() where counters[e][s].value > 0 {
                calls.samples.append(.init(labels: [("endpoint", endpoint), ("status", status)], value: Double(counters[e][s].value)))
            }
            if latency[e].count > 0 { duration.samples += latency[e].samples(labels: [("endpoint", endpoint)]) }
        }
        return [calls, duration]
    }

    static func endpointIndex(_ url: String) -> Int {
        // The path's last segment, read from the end without splitting the URL (every call).
        let utf8 = url.utf8
        let end = utf8.firstIndex(of: UInt8(ascii: "?")) ?? utf8.endIndex
        let start = utf8[..<end].lastIndex(of: UInt8(ascii: "/")).map(utf8.index(after:)) ?? utf8.startIndex
        let last = utf8[start..<end]
        return endpoints.firstIndex { $0.utf8.elementsEqual(last) } ?? endpoints.count - 1
    }

    static func status(of error: TransportError) -> String {
        switch error.kind {
        case .timeout: "timeout"
        case .connectionFailed: "connection_failed"
        case .connectionReset: "connection_reset"
        case .certificate: "certificate"
        case .cancelled: "cancelled"
        case .other: "error"
        }
    }
}

/// The decorator `AppleCallMetrics.instrument(_:)` returns.
struct InstrumentedTransport: HTTPTransport {
    let base: any HTTPTransport
    let metrics: AppleCallMetrics
    let clock = ContinuousClock()

    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        let started = clock.now
        do {
            let response = try await base.send(request)
            metrics.record(url: request.url, httpStatus: response.status, elapsed: clock.now - started)
            return response
        } catch {
            metrics.record(url: request.url, status: AppleCallMetrics.status(of: error), elapsed: clock.now - started)
            throw error
        }
    }
}
