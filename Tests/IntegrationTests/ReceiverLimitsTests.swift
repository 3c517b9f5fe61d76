import AppleID
import Foundation
import Postgres
import SIWACrypto
import Testing
import TestSupport
@testable import SIWAJobs
#if canImport(Glibc)
import Glibc
#endif

/// Issue #13's receiver limits, through `notifications serve`: a trickling client is cut at the
/// request deadline, an oversized body is refused before it is sent, `%0a` in a path stays one
/// text log line, and a `jti` with a NUL is a 400 that stores nothing.
@Suite(.serialized) struct ReceiverLimitsTests {
    @Test func theReceiversLimitsHold() async throws {
        let world = try await SIWAWorld.create()
        var env = world.environment
        env["SIWA_LOG_FORMAT"] = "text"
        let (receiver, url) = try await RolesTests.startReceiver(env, arguments: ["--request-deadline-seconds", "2"])
        let port = try #require(UInt16(url.split(separator: ":").last.map { String($0.dropLast()) } ?? ""))

        // 1. A header byte every 300 ms is never idle, but the whole request has 2 s.
        let fd = try RawHTTP.connectedSocket(port: port)
        defer { close(fd) }
        _ = Self.send(fd, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        let cut = await Self.offPool {
            for _ in 0..<100 {   // gives up after 30 s
                guard Self.send(fd, "X"), !Self.closedByPeer(fd) else { return true }
                usleep(300_000)
            }
            return Self.closedByPeer(fd)
        }
        #expect(cut, "the trickling connection was never cut")

        // 2. 10 MB announced, nothing sent: 413 at once.
        let big = try RawHTTP.connectedSocket(port: port)
        defer { close(big) }
        _ = Self.send(big, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n")
        let answer = await Self.offPool { Self.readAll(big) }
        #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer)")

        // 3. A decoded newline in the path cannot forge a log line.
        let forged = try RawHTTP.request(port: port, method: "GET", path: "/x%0a2026-12-01T00:00:00Z%20ERROR%20FORGED")
        #expect(forged.status == 404)

        // 4. A NUL in jti: 400, nothing stored.
        let header = Base64URL.encode(Array(#"{"alg":"RS256","kid":"K1"}"#.utf8))
        let claims = Base64URL.encode(Array("{\"jti\":\"a\u{0}b\",\"iss\":\"https://appleid.apple.com\"}".utf8))
        let token = "\(header).\(claims).\(Base64URL.encode([1, 2, 3]))"
        let body = Array(try JSONSerialization.data(withJSONObject: ["payload": token]))
        let nul = try RawHTTP.request(port: port, method: "POST", path: "/", headers: [("Content-Type", "application/json")],
                                      body: body)
        #expect(nul.status == 400, "\(nul.text)")
        let stored: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.notifications")
        #expect(stored == 0)

        receiver.signal(SIGTERM)
        _ = await receiver.wait()
        let lines = receiver.stderr.split(separator: "\n")
        let mentions = lines.filter { $0.contains("FORGED") }
        #expect(mentions.count == 1 && mentions.first?.contains("unknown path") == true, "\(mentions)")
        #expect(!lines.contains { $0.hasPrefix("2026-12-01T00:00:00Z") }, "a forged line: \(receiver.stderr.suffix(2000))")
        await world.tearDown()
    }

    static func send(_ fd: Int32, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    static func closedByPeer(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// Everything until the server closes, or 30 s pass without a byte.
    static func readAll(_ fd: Int32) -> String {
        var tv = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            data += buffer[0..<n]
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// `body` on a thread of its own (it blocks), not on the concurrency pool.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in Thread { continuation.resume(returning: body()) }.start() }
    }
}
