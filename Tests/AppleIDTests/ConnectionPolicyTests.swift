import CCurl
import Testing
import TestSupport
@testable import AppleID

/// The HTTP version toward Apple and the libcurl options it chooses (`ConnectionPolicy`), and the
/// transport's counts of what it really spoke (`TransportStatistics`).
@Suite(.serialized, .timeLimit(.minutes(2))) struct ConnectionPolicyTests {
    @Test func versionsParseFromTheirUsualSpellings() {
        for text in ["1.1", "HTTP/1.1", " h1 "] { #expect(HTTPVersion(parsing: text) == .http1_1, "\(text)") }
        for text in ["2", "2.0", "h2", "HTTP/2"] { #expect(HTTPVersion(parsing: text) == .http2, "\(text)") }
        for text in ["", "1", "1.0", "3", "h2c", "http2", "fast"] { #expect(HTTPVersion(parsing: text) == nil, "\(text)") }
        #expect(HTTPVersion.allCases.map(\.description) == ["1.1", "2"])
    }

    @Test func http11AsksForHTTP11OnePerConnectionUpToTheCap() {
        let policy = ConnectionPolicy(httpVersion: .http1_1, maxConnectionsPerHost: 512)
        #expect(policy.maxConnectionsPerHost == 512 && policy.maxStreamsPerConnection == 1 && policy.maxInFlightPerHost == 512)
        #expect(policy.easyOptions.map { $0.option } == [CURLOPT_HTTP_VERSION, CURLOPT_PIPEWAIT])
        #expect(policy.easyOptions.map { $0.value } == [Int(CURL_HTTP_VERSION_1_1), 0])
        #expect(policy.multiOptions.map { $0.option } == [CURLMOPT_MAX_HOST_CONNECTIONS, CURLMOPT_PIPELINING,
                                                     CURLMOPT_MAX_CONCURRENT_STREAMS, CURLMOPT_MAXCONNECTS])
        #expect(policy.multiOptions.map { $0.value } == [512, Int(CURLPIPE_MULTIPLEX), 1, 512])
        #expect(ConnectionPolicy(httpVersion: .http1_1, maxConnectionsPerHost: 0).maxConnectionsPerHost == 1)
        #expect(policy.http1FallbackMultiOptions.isEmpty, "nothing to lift")
    }

    @Test func http2MultiplexesOverTLSOnFewConnectionsWithRoomForEveryItemInFlight() {
        let policy = ConnectionPolicy(httpVersion: .http2, maxConnectionsPerHost: 512)
        #expect(policy.easyOptions.map { $0.value } == [Int(CURL_HTTP_VERSION_2TLS), 1], "2TLS + PIPEWAIT")
        #expect(policy.multiOptions.map { $0.value } == [64, Int(CURLPIPE_MULTIPLEX), 100, 64])
        #expect(policy.maxInFlightPerHost >= 4096, "every item of the largest --concurrency can be in flight")
        #expect(ConnectionPolicy(httpVersion: .http2, maxConnectionsPerHost: 4).maxConnectionsPerHost == 4, "a smaller cap holds")
        #expect(policy.http1FallbackMultiOptions.map { $0.option } == [CURLMOPT_MAX_HOST_CONNECTIONS, CURLMOPT_MAXCONNECTS])
        #expect(policy.http1FallbackMultiOptions.map { $0.value } == [512, 512], "an HTTP/1.1 server gets the HTTP/1.1 cap")
    }

    @Test func readyAnswersAreGatheredForAMillisecondByDefault() {
        let policy = ConnectionPolicy()
        #expect(policy.coalescing == .milliseconds(1) && policy.coalescingMicroseconds == 1000)
        #expect(ConnectionPolicy(coalescing: .microseconds(250)).coalescingMicroseconds == 250)
        #expect(ConnectionPolicy(coalescing: .zero).coalescingMicroseconds == 0, "zero: each wake-up at once")
        #expect(ConnectionPolicy(coalescing: .milliseconds(-3)).coalescing == .zero)
        #expect(ConnectionPolicy(coalescing: .seconds(5)).coalescing == .milliseconds(100), "never more than 100 ms")
    }

    @Test func theTransportUsesThePolicyOfItsVersion() {
        let transport = CurlTransport(maxConnectionsPerHost: 300, httpVersion: .http2)
        defer { transport.shutdown() }
        #expect(transport.policy == ConnectionPolicy(httpVersion: .http2, maxConnectionsPerHost: 300))
        let plain = CurlTransport()
        defer { plain.shutdown() }
        #expect(plain.policy.httpVersion == HTTPVersion.default && plain.policy.http1ConnectionsPerHost == 512)
    }

    /// The default asks for HTTP/2. A server that answers in HTTP/1.1 (this one: plain http, no
    /// ALPN) must still get one connection per request in flight, not the 64 of HTTP/2: after its
    /// first answer, 100 requests that it holds (`/slow` answers after 30 s) all reach it at once.
    /// With the HTTP/2 cap kept, 36 of them would wait for the first 64 answers, 30 s away.
    @Test func askedForHTTP2AnHTTP11ServerGetsAConnectionPerRequestInFlight() async throws {
        let server = try EchoServer()
        defer { server.stop() }
        let transport = CurlTransport(maxConnectionsPerHost: 512)
        defer { transport.shutdown() }
        #expect(transport.policy.httpVersion == .http2 && transport.policy.maxConnectionsPerHost == ConnectionPolicy.http2ConnectionCap)
        _ = try await transport.send(HTTPRequest(method: "POST", url: server.url("/echo"), body: [1], timeout: .seconds(10)))
        let held = ConnectionPolicy.http2ConnectionCap + 36
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<held {
                group.addTask { _ = try? await transport.send(HTTPRequest(url: server.url("/slow"), timeout: .seconds(60))) }
            }
            try await Poll.until("the server to hold \(held) requests at once", timeout: .seconds(20)) {
                try await server.seen("/slow") >= held
            }
            group.cancelAll()
        }
        #expect(transport.statistics.http1Responses == 1 && transport.statistics.http2Responses == 0)
    }

    /// Plain http has no ALPN: asked for HTTP/2 (2TLS), libcurl still speaks HTTP/1.1 there, over
    /// one kept-alive connection; the statistics count both.
    @Test(arguments: HTTPVersion.allCases) func statisticsCountResponsesByVersionAndConnectionsOpened(version: HTTPVersion) async throws {
        let server = try EchoServer()
        defer { server.stop() }
        let transport = CurlTransport(httpVersion: version)
        defer { transport.shutdown() }
        #expect(transport.statistics == TransportStatistics())
        for _ in 0..<20 {
            _ = try await transport.send(HTTPRequest(method: "POST", url: server.url("/echo"), body: [1], timeout: .seconds(10)))
        }
        #expect(transport.statistics == TransportStatistics(http1Responses: 20, connectionsOpened: 1))
        #expect(transport.statistics.description == "http1_responses=20 http2_responses=0 other_responses=0 connections_opened=1")
    }
}
