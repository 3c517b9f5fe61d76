import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy from 127.0.0.1:`port` to 127.0.0.1:`targetPort` that can freeze: while frozen it
/// accepts connections and reads what clients send but forwards nothing either way, so a client
/// sees a PostgreSQL that never answers (as when the server is stopped with SIGSTOP), while the
/// test cluster itself keeps serving other tests. One thread per direction per connection.
final class FreezableProxy: Sendable {
    let port: UInt16
    private let targetPort: UInt16
    private let listener: Int32
    private struct State {
        var frozen = false
        var closed = false
        var accepted = 0
        var sockets: [Int32] = []
    }
    private let state = Mutex(State())

    init(targetPort: UInt16) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("proxy: socket failed (errno \(errno))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            Glibc.close(fd)
            throw TestFailure("proxy: cannot listen (errno \(errno))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.listener = fd
        self.targetPort = targetPort
        self.port = UInt16(bigEndian: addr.sin_port)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Connections accepted so far.
    var accepted: Int { state.withLock { $0.accepted } }

    var frozen: Bool {
        get { state.withLock { $0.frozen } }
        set { state.withLock { $0.frozen = newValue } }
    }

    /// Stops accepting and shuts every proxied connection down (each socket is closed by its own
    /// threads once both directions end, never while another thread may still use its number).
    func close() {
        state.withLock { s in
            s.closed = true
            for fd in s.sockets { shutdown(fd, Int32(SHUT_RDWR)) }
        }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return addr
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if state.withLock({ $0.closed }) { break }
                continue
            }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = Self.loopback(port: targetPort)
            let connected = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            let registered = state.withLock { s -> Bool in
                guard !s.closed, connected == 0 else { return false }
                s.accepted += 1
                s.sockets += [client, server]
                return true
            }
            guard registered else {
                Glibc.close(client)
                Glibc.close(server)
                continue
            }
            let ends = Atomic<Int>(0)
            let finish: @Sendable () -> Void = { [self] in
                guard ends.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue == 2 else { return }
                state.withLock { s in
                    s.sockets.removeAll { $0 == client || $0 == server }
                    Glibc.close(client)
                    Glibc.close(server)
                }
            }
            Thread.detachNewThread { [self] in
                pump(from: client, to: server)
                finish()
            }
            Thread.detachNewThread { [self] in
                pump(from: server, to: client)
                finish()
            }
        }
        Glibc.close(listener)
    }

    /// Copies bytes until EOF or an error, holding them while frozen.
    private func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        copying: while true {
            let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            while state.withLock({ $0.frozen && !$0.closed }) { usleep(5_000) }
            if state.withLock({ $0.closed }) { break }
            var sent = 0
            while sent < count {
                let n = buffer[sent..<count].withUnsafeBytes { send(destination, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { break copying }
                sent += n
            }
        }
        shutdown(destination, Int32(SHUT_WR))
    }
}
