import CCurl
import Foundation

/// The HTTP version the client speaks to Apple (`SIWA_HTTP_VERSION`, `work --http-version`).
///
/// Measured with `scripts/http2-bench.sh` (README "HTTP/2 or HTTP/1.1"): `default` is the faster
/// of the two on a refresh validation drain at C=512; the other stays available.
public enum HTTPVersion: String, Sendable, CaseIterable, CustomStringConvertible {
    /// HTTP/1.1 with keep-alive (RFC 9112): one request at a time per connection, so one TCP + TLS
    /// connection per item in flight.
    case http1_1 = "1.1"
    /// HTTP/2 over TLS (RFC 9113), negotiated by ALPN ("h2"), many streams multiplexed on few
    /// connections. A server that does not offer h2 (or plain http) gets HTTP/1.1.
    case http2 = "2"

    /// The version used when nothing is configured: HTTP/2, the faster at C=512 in the quiet
    /// measurement (README "HTTP/2 or HTTP/1.1"). A server without h2 gets HTTP/1.1 with one
    /// connection per request in flight (`ConnectionPolicy.http1FallbackMultiOptions`).
    public static let `default`: HTTPVersion = .http2

    /// `1.1` or `2`, as `SIWA_HTTP_VERSION` takes it.
    public var description: String { rawValue }

    /// `text` as a version: `1.1` (also `http/1.1`, `h1`) or `2` (also `2.0`, `h2`), any case.
    public init?(parsing text: String) {
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "1.1", "http/1.1", "h1": self = .http1_1
        case "2", "2.0", "http/2", "h2": self = .http2
        default: return nil
        }
    }
}

/// How `CurlTransport` uses connections to one host: the libcurl options that follow from the
/// HTTP version, as plain values so tests can check what is chosen.
///
/// - HTTP/1.1: `CURLOPT_HTTP_VERSION = CURL_HTTP_VERSION_1_1`; at most `maxConnectionsPerHost`
///   keep-alive connections (`CURLMOPT_MAX_HOST_CONNECTIONS`), each carrying one request at a time.
/// - HTTP/2: `CURL_HTTP_VERSION_2TLS`, `CURLOPT_PIPEWAIT` (a new transfer waits for a connection
///   that can multiplex rather than opening its own while the first handshake runs),
///   `CURLMOPT_MAX_CONCURRENT_STREAMS` streams per connection (the server's SETTINGS may lower it)
///   and at most `http2ConnectionCap` connections: a new one opens only when the others are full.
///   64 × 100 streams = 6,400 covers the most items in flight (`work --concurrency` ≤ 4096).
///   When the server answers in HTTP/1.1 instead (no h2 in its ALPN, or plain http), the engine
///   lifts the caps to the HTTP/1.1 ones (`http1FallbackMultiOptions`) and stops waiting to
///   multiplex, so an HTTP/1.1-only server still gets one connection per request in flight.
///
/// In both, `CURLMOPT_PIPELINING = CURLPIPE_MULTIPLEX` (a no-op for HTTP/1.1), and the connection
/// cache keeps every allowed connection (`CURLMOPT_MAXCONNECTS = maxConnectionsPerHost`; libcurl's
/// default, 4 × the transfers in flight, closes kept-alive connections whenever the in-flight
/// count dips, e.g. between two claims, and the next burst pays new TLS handshakes).
public struct ConnectionPolicy: Sendable, Equatable {
    /// The most HTTP/2 connections to one host.
    public static let http2ConnectionCap = 64
    /// Streams per HTTP/2 connection asked for (libcurl's own default; nghttpx and most servers
    /// announce 100 too).
    public static let http2StreamsPerConnection = 100

    /// The shortest time between two steps of the transport's loop that handle sockets: a socket
    /// that becomes ready sooner after the last such step waits out the rest, and the next step
    /// handles every answer ready by then together. libcurl 7.88 runs every transfer multiplexed
    /// on a connection whenever its socket wakes, and each step has fixed costs, so at C=256,
    /// with a step for every three or four answers, they were a tenth or more of the worker's CPU
    /// per item. A loop already busier than this (C=512) never waits; an answer waits at most
    /// this long, against the tens of ms Apple takes (README "Cost per item", "Answers handled
    /// in batches"). Default 1 ms; zero handles each wake-up at once.
    public let coalescing: Duration
    public let httpVersion: HTTPVersion
    /// `CURLMOPT_MAX_HOST_CONNECTIONS`.
    public let maxConnectionsPerHost: Int
    /// `CURLMOPT_MAX_CONCURRENT_STREAMS` (1 for HTTP/1.1, where it does not apply).
    public let maxStreamsPerConnection: Int
    /// The HTTP/1.1 connection cap asked for (at least 1): `maxConnectionsPerHost` of HTTP/1.1,
    /// and of HTTP/2 toward a server that answers in HTTP/1.1.
    public let http1ConnectionsPerHost: Int

    /// - Parameters:
    ///   - httpVersion: the version to ask for.
    ///   - maxConnectionsPerHost: the HTTP/1.1 connection cap (default 512, at least 1); HTTP/2
    ///     uses the smaller of it and `http2ConnectionCap`.
    ///   - coalescing: see `coalescing`; clamped to 0...100 ms.
    public init(httpVersion: HTTPVersion = .default, maxConnectionsPerHost: Int = 512, coalescing: Duration = .milliseconds(1)) {
        self.httpVersion = httpVersion
        self.coalescing = max(.zero, min(coalescing, .milliseconds(100)))
        let cap = max(1, maxConnectionsPerHost)
        self.http1ConnectionsPerHost = cap
        switch httpVersion {
        case .http1_1:
            self.maxConnectionsPerHost = cap
            self.maxStreamsPerConnection = 1
        case .http2:
            self.maxConnectionsPerHost = min(cap, Self.http2ConnectionCap)
            self.maxStreamsPerConnection = Self.http2StreamsPerConnection
        }
    }

    /// `coalescing` in whole microseconds (`ccurl_events.linger_us`).
    var coalescingMicroseconds: Int {
        Int(coalescing.components.seconds) * 1_000_000 + Int(coalescing.components.attoseconds / 1_000_000_000_000)
    }

    /// The most requests in flight to one host at once; more queue inside libcurl.
    public var maxInFlightPerHost: Int { maxConnectionsPerHost * maxStreamsPerConnection }

    /// `CURLOPT_HTTP_VERSION`.
    var curlHTTPVersion: Int {
        switch httpVersion {
        case .http1_1: Int(CURL_HTTP_VERSION_1_1)
        case .http2: Int(CURL_HTTP_VERSION_2TLS)
        }
    }

    /// `CURLOPT_PIPEWAIT`: 1 for HTTP/2.
    var pipeWait: Int { httpVersion == .http2 ? 1 : 0 }

    /// The options set once on the multi handle, in order.
    var multiOptions: [(option: CURLMoption, value: Int)] {
        [(CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost),
         (CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX)),
         (CURLMOPT_MAX_CONCURRENT_STREAMS, max(1, maxStreamsPerConnection)),
         (CURLMOPT_MAXCONNECTS, maxConnectionsPerHost)]
    }

    /// The multi options that replace the HTTP/2 caps once the server has answered in HTTP/1.1:
    /// `http1ConnectionsPerHost` connections, each kept. Empty for HTTP/1.1 (nothing to lift).
    var http1FallbackMultiOptions: [(option: CURLMoption, value: Int)] {
        guard httpVersion == .http2 else { return [] }
        return [(CURLMOPT_MAX_HOST_CONNECTIONS, http1ConnectionsPerHost), (CURLMOPT_MAXCONNECTS, http1ConnectionsPerHost)]
    }

    /// The options set on every easy handle (after `curl_easy_reset`), in order.
    var easyOptions: [(option: CURLoption, value: Int)] {
        [(CURLOPT_HTTP_VERSION, curlHTTPVersion), (CURLOPT_PIPEWAIT, pipeWait)]
    }
}
