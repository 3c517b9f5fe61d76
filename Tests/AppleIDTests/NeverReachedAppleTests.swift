import Foundation
import Testing
@testable import AppleID

/// Which failed calls never reached Apple (issue #8: those charge no attempt).
@Suite(.serialized) struct NeverReachedAppleTests {
    @Test(arguments: [TransportError.Kind.timeout, .connectionFailed, .connectionReset, .cancelled, .other])
    func onlyAFailedConnectionNeverReachedApple(_ kind: TransportError.Kind) {
        let error = AppleIDError.transport(TransportError(kind: kind, message: "test"))
        #expect(error.neverReachedApple == (kind == .connectionFailed))
        #expect(error.isRetryable)
    }

    @Test func httpAnswersReachedApple() {
        #expect(!AppleIDError(errorClass: .transient, httpStatus: 503, detail: "503").neverReachedApple)
        #expect(!AppleIDError(errorClass: .permanent, appleError: "invalid_grant", httpStatus: 400, detail: "x").neverReachedApple)
    }

    @Test func aConnectTimeoutIsAFailedConnectionNotATimeout() async throws {
        // A listening socket whose accept queue is full: the kernel drops further SYNs, so a
        // connect hangs until curl's connect timeout, before any request byte is sent.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        #expect(bound && listen(listener, 0) == 0)
        let port = UInt16(bigEndian: address.sin_port)
        // Fill the accept queue (never accepted).
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<4 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            fillers.append(fd)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        let transport = CurlTransport()
        defer { transport.shutdown() }
        do {
            _ = try await transport.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/auth/token",
                                                     body: Array("x=1".utf8), timeout: .seconds(1)))
            Issue.record("the request was answered")
        } catch {
            #expect(error.kind == .connectionFailed, "\(error)")
        }
    }
}
