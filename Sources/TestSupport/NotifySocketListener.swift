import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A fake `$NOTIFY_SOCKET` for tests: an AF_UNIX datagram socket bound to an abstract address
/// (`@siwa-notify-<random>`, no file) or to a path, that collects the datagrams a process sends.
/// Non-blocking; `next(within:)` polls it every 10 ms up to a deadline.
public final class NotifySocketListener: @unchecked Sendable {   // the fd is only read from one test task at a time
    /// What to put in `NOTIFY_SOCKET`.
    public let address: String
    private let fd: Int32

    /// - Parameter path: a file system path to bind; nil binds a fresh abstract address.
    /// - Throws: `NotifySocketError` when the socket cannot be bound.
    public init(path: String? = nil) throws {
        let address = path ?? "@siwa-notify-\(UUID().uuidString)"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw NotifySocketError(message: "socket: \(String(cString: strerror(errno)))") }
        var sa = sockaddr_un()
        sa.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(address.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &sa.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let bound = withUnsafePointer(to: &sa) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw NotifySocketError(message: "bind \(address): \(why)")
        }
        self.address = address
        self.fd = fd
    }

    deinit { close(fd) }

    /// The next datagram as text, or nil when none arrives within `timeout`.
    public func next(within timeout: Duration) async -> String? {
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 { return String(decoding: buffer[0..<n], as: UTF8.self) }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Datagrams until one contains `line` (e.g. `STOPPING=1`), or nil when it does not arrive
    /// within `timeout`; returns every datagram read, the matching one last.
    public func collect(until line: String, within timeout: Duration) async -> [String]? {
        let deadline = ContinuousClock.now + timeout
        var seen: [String] = []
        while ContinuousClock.now < deadline {
            guard let message = await next(within: deadline - ContinuousClock.now) else { return nil }
            seen.append(message)
            if message.split(separator: "\n").contains(Substring(line)) { return seen }
        }
        return nil
    }
}

public struct NotifySocketError: Error, CustomStringConvertible {
    public let message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}
