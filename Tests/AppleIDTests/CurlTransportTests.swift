import Foundation
import Synchronization
import Testing
@testable import AppleID

/// CurlTransport against a real local HTTP server (Fixtures/EchoServer.swift).
@Suite(.serialized, .timeLimit(.minutes(5))) struct CurlTransportTests {
    @Test func postEchoesBodyHeadersAndMethod() async throws {
        let server = try EchoServer()
        defer { server.stop() }
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let body = Array(FormEncoding.encode([("refresh_token", "a+b/c= d&e")]).utf8)
        let response = try await transport.send(HTTPRequest(
            method: "POST", url: server.url("/echo"),
            headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Authorization", "Bearer t0k")],
            body: body, timeout: .seconds(10)))
        #expect(response.status == 200)
        #expect(response.body == body)
        #expect(response.header("x-method") == "POST")
        #expect(response.header("X-CONTENT-TYPE") == "application/x-www-form-urlencoded")
        #expect(response.header("x-authorization") == "Bearer t0k")
        let get = try await transport.send(HTTPRequest(url: server.url("/echo"), timeout: .seconds(10)))
        #expect(get.header("X-Method") == "GET")
        #expect(get.body.isEmpty)
    }

    @Test func nonSuccessStatusIsAResponseNotAnError() async throws {
        let server = try EchoServer()
        defer { server.stop() }
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let response = try await transport.send(HTTPRequest(method: "POST", url: server.url("/status/503"), timeout: .seconds(10)))
        #expect(response.status == 503)
        #expect(response.header("retry-after") == "7")
        #expect(response.header("content-type") == "text/html")
    }

    @Test func manyConcurrentRequestsAllCompleteCorrectly() async throws {
        let server = try EchoServer()
        defer { server.stop() }
        let transport = CurlTransport(maxConnectionsPerHost: 512)
        defer { transport.shutdown() }
        let total = 2_000, inFlight = 512
        let mismatches = try await withThrowingTaskGroup(of: Bool.self, returning: Int.self) { group in
            var started = 0, bad = 0
            func add() {
                let payload = Array("item=\(started)".utf8)
                group.addTask {
                    let r = try await transport.send(HTTPRequest(method: "POST", url: server.url("/echo"), body: payload, timeout: .seconds(30)))
                    return r.status == 200 && r.body == payload
                }
                started += 1
            }
            while started < inFlight { add() }
            while let ok = try await group.next() {
                if !ok { bad += 1 }
                if started < total { add() }
            }
            return bad
        }
        #expect(mismatches == 0)
    }

    @Test func keepAliveReusesConnections() async throws {
        let server = try EchoServer()
        defer { server.stop() }
        let transport = CurlTransport()
        defer { transport.shutdown() }
        for _ in 0..<50 {
            _ = try await transport.send(HTTPRequest(method: "POST", url: server.url("/echo"), body: [1], timeout: .seconds(10)))
        }
        let count = try await transport.send(HTTPRequest(url: server.url("/connections"), timeout: .seconds(10)))
        #expect(String(decoding: count.body, as: UTF8.self) == "1")
    }

    @Test func errorsAreClassified() async throws {
        let server = try EchoServer()
        defer { server.stop() }
        let transport = CurlTransport(maxResponseBytes: 1024)
        defer { transport.shutdown() }
        await #expect(throws: TransportError.self) { try await transport.send(HTTPRequest(url: server.url("/close"))) }
        do {
            _ = try await transport.send(HTTPRequest(url: server.url("/close")))
        } catch {
            #expect(error.kind == .connectionReset)
        }
        do {
            _ = try await transport.send(HTTPRequest(url: "http://127.0.0.1:1/", timeout: .seconds(5)))
            Issue.record("connected to port 1")
        } catch {
            #expect(error.kind == .connectionFailed)
        }
        do {
            _ = try await transport.send(HTTPRequest(url: server.url("/slow"), timeout: .milliseconds(300)))
            Issue.record("no timeout")
        } catch {
            #expect(error.kind == .timeout)
        }
        do {
            _ = try await transport.send(HTTPRequest(url: server.url("/big")))
            Issue.record("oversized body accepted")
        } catch {
            #expect(error.kind == .other)
            #expect(error.message.contains("1024"))
        }
    }

    @Test func cancellationAbortsTheTransfer() async throws {
        let server = try EchoServer()
        defer { server.stop() }
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let task = Task { try await transport.send(HTTPRequest(url: server.url("/slow"), timeout: .seconds(60))) }
        // In flight from the server's side: it has read the request and is holding the answer.
        try await server.waitUntilSeen("/slow")
        task.cancel()
        let result = await task.result
        #expect(throws: TransportError(kind: .cancelled, message: "request cancelled")) { try result.get() }
        // An already-cancelled task never reaches the network.
        let pre = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await transport.send(HTTPRequest(url: server.url("/echo")))
        }
        await #expect(throws: TransportError.self) { try await pre.value }
        #expect(try await server.seen("/echo") == 0, "a request cancelled before it started was sent")
        // The transport still works afterwards.
        #expect(try await transport.send(HTTPRequest(url: server.url("/echo"))).status == 200)
        #expect(try await server.seen("/echo") == 1)
    }

    @Test func cancellationStormResumesEveryCallerOnce() async throws {
        let server = try EchoServer()
        defer { server.stop() }
        let transport = CurlTransport()
        defer { transport.shutdown() }
        // Half the requests hang (/slow), half complete (/echo); cancel them all mid-flight.
        let tasks = (0..<300).map { i in
            Task { () -> TransportError.Kind? in
                do throws(TransportError) {
                    _ = try await transport.send(HTTPRequest(method: "POST", url: server.url(i % 2 == 0 ? "/slow" : "/echo"), body: [1], timeout: .seconds(60)))
                    return nil
                } catch {
                    return error.kind
                }
            }
        }
        try await Task.sleep(nanoseconds: 200_000_000)
        for task in tasks { task.cancel() }
        var outcomes: [TransportError.Kind?] = []
        for task in tasks { outcomes.append(await task.value) }
        let slow = stride(from: 0, to: 300, by: 2).map { outcomes[$0] }
        #expect(slow.allSatisfy { $0 == .cancelled })
        #expect(outcomes.allSatisfy { $0 == nil || $0 == .cancelled })
        #expect(try await transport.send(HTTPRequest(url: server.url("/echo"))).status == 200)
    }

    @Test func shutdownFailsInFlightAndLaterRequests() async throws {
        let server = try EchoServer()
        defer { server.stop() }
        let transport = CurlTransport()
        let pending = Task { try await transport.send(HTTPRequest(url: server.url("/slow"), timeout: .seconds(60))) }
        // In flight from the server's side before the shutdown.
        try await server.waitUntilSeen("/slow")
        transport.shutdown()
        let shutDown = TransportError(kind: .other, message: "transport shut down")
        let inFlight = await pending.result
        #expect(throws: shutDown) { try inFlight.get() }
        // A later request fails the same way without reaching the server.
        let later = await Task { try await transport.send(HTTPRequest(url: server.url("/echo"), timeout: .seconds(10))) }.result
        #expect(throws: shutDown) { try later.get() }
        #expect(try await server.seen("/echo") == 0, "a request sent after shutdown reached the server")
        #expect(try await server.seen("/slow") == 1)
    }

    @Test func shutdownFailsLaterRequests() async throws {
        let transport = CurlTransport()
        transport.shutdown()
        transport.shutdown()
        do {
            _ = try await transport.send(HTTPRequest(url: "http://127.0.0.1:1/"))
            Issue.record("sent after shutdown")
        } catch {
            #expect(error.message == "transport shut down")
        }
    }

    /// Throughput check, opt-in (timing depends on the machine): SIWA_BENCH=1 swift test --filter throughput
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SIWA_BENCH"] == "1"))
    func throughputAt512InFlight() async throws {
        let server = try EchoServer()
        defer { server.stop() }
        let transport = CurlTransport(maxConnectionsPerHost: 512)
        defer { transport.shutdown() }
        let total = 20_000
        let start = Date()
        try await withThrowingTaskGroup(of: Void.self) { group in
            var started = 0
            while started < 512 { started += 1; group.addTask { _ = try await transport.send(HTTPRequest(method: "POST", url: server.url("/echo"), body: [1], timeout: .seconds(30))) } }
            while try await group.next() != nil {
                if started < total { started += 1; group.addTask { _ = try await transport.send(HTTPRequest(method: "POST", url: server.url("/echo"), body: [1], timeout: .seconds(30))) } }
            }
        }
        let rate = Double(total) / Date().timeIntervalSince(start)
        print("CurlTransport throughput: \(Int(rate)) req/s at 512 in flight")
        #expect(rate >= 4000)
    }
}
