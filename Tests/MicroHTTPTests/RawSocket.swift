import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// One TCP connection to 127.0.0.1 that a test drives by hand: partial requests, silence, and
/// watching whether (and how) the server answers or closes.
final class RawSocket: @unchecked Sendable {   // used by one test task at a time
    private let fd: Int32
    private var open = true

    /// What `read` saw.
    struct Reading {
        var bytes: [UInt8] = []
        /// The server closed the connection (EOF or reset).
        var closed = false
        /// Nothing more arrived within the wait, and the connection is still open.
        var timedOut = false
        var text: String { String(decoding: bytes, as: UTF8.self) }
        /// The status code of a response that starts with `HTTP/1.1 NNN`, else nil.
        var status: Int? {
            let parts = text.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/") else { return nil }
            return Int(parts[1])
        }
    }

    /// - Throws: `RawHTTPError.connect` when the connection cannot be made.
    init(port: UInt16) throws {
        fd = try RawHTTP.connectedSocket(port: port)
    }

    deinit { close() }

    /// Sends `text`; false when the server has already closed the connection.
    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// Reads until the server closes the connection, or until `seconds` pass with nothing new
    /// (then `timedOut`). Blocks the calling thread: call through `readOffPool`.
    func read(waitingAtMost seconds: Int) -> Reading {
        var tv = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var reading = Reading()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { reading.bytes += buffer[0..<n]; continue }
            if n == 0 || errno == ECONNRESET { reading.closed = true } else { reading.timedOut = true }
            return reading
        }
    }

    /// `read` on a thread of its own, so the test never blocks a thread of the concurrency pool.
    func readOffPool(waitingAtMost seconds: Int) async -> Reading {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: self.read(waitingAtMost: seconds)) }.start()
        }
    }

    /// Sends `text` one byte at a time, `interval` apart, until the server closes the connection
    /// (true) or every byte is sent (false). On a thread of its own, as `readOffPool`.
    func trickleOffPool(_ text: String, interval: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread {
                for byte in text {
                    guard self.send(String(byte)), !self.closedByPeer() else { return continuation.resume(returning: true) }
                    Thread.sleep(forTimeInterval: Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18)
                }
                continuation.resume(returning: self.closedByPeer())
            }.start()
        }
    }

    /// True when the server has closed (or reset) the connection; does not wait or consume data.
    func closedByPeer() -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    func close() {
        guard open else { return }
        open = false
        Glibc.close(fd)
    }
}
