import Foundation
import Synchronization

/// A TCP server on 127.0.0.1 that accepts connections and closes them at once, counting them:
/// a PostgreSQL "server" that every connection attempt reaches and fails against, so a test can
/// count a client's retries.
final class AcceptCounter: Sendable {
    let port: UInt16
    private let fd: Int32
    private let accepted = Atomic<Int>(0)

    init() throws {
        (fd, port) = try Self.listeningSocket()
        let listening = fd
        let thread = Thread { [self] in
            while true {
                let client = accept(listening, nil, nil)
                if client < 0 { return }   // closed by stop()
                accepted.add(1, ordering: .relaxed)
                close(client)
            }
        }
        thread.start()
    }

    /// A socket listening on 127.0.0.1 at a free port.
    private static func listeningSocket() throws -> (Int32, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// Connections accepted so far.
    var count: Int { accepted.load(ordering: .relaxed) }

    func stop() { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
}
