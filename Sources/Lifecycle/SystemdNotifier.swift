import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// sd_notify(3) without libsystemd: state lines (`READY=1`, `STATUS=…`, `WATCHDOG=1`,
/// `STOPPING=1`) sent as one AF_UNIX datagram each to `$NOTIFY_SOCKET`, a path, or an abstract
/// socket when it starts with `@` (the `@` stands for the leading NUL byte). Sending never blocks
/// and never throws: systemd not listening must not stop the service (a failure is reported once
/// through `onError`).
public struct SystemdNotifier: Sendable {
    /// The socket address as given (`/run/systemd/notify` or `@/org/freedesktop/...`).
    public let socketPath: String
    /// How often `WATCHDOG=1` is sent: half of `WATCHDOG_USEC`; nil when no watchdog is asked for.
    public let watchdogInterval: Duration?

    public init(socketPath: String, watchdogInterval: Duration?) {
        self.socketPath = socketPath
        self.watchdogInterval = watchdogInterval
    }

    /// The notifier `environment` asks for (systemd sets `NOTIFY_SOCKET` for `Type=notify` units,
    /// and `WATCHDOG_USEC`, `WATCHDOG_PID` with `WatchdogSec=`), or nil when `NOTIFY_SOCKET` is unset.
    /// The watchdog is used only when `WATCHDOG_PID` is unset or this process's pid.
    /// Read once at the edge (the CLI); `environment` is the process environment.
    public static func from(environment: [String: String], pid: Int32 = getpid()) -> SystemdNotifier? {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return nil }
        var interval: Duration?
        if let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0,
           environment["WATCHDOG_PID"].map({ Int32($0) == pid }) ?? true {
            interval = .microseconds(Int64(clamping: usec / 2))
        }
        return SystemdNotifier(socketPath: path, watchdogInterval: interval)
    }

    /// Sends `state` (e.g. `"READY=1\nSTATUS=serving"`) as one datagram.
    /// - Returns: nil when sent, else why not (`errno`'s text).
    @discardableResult
    public func send(_ state: String) -> String? {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(socketPath.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else { return "NOTIFY_SOCKET is empty or longer than \(capacity - 1) bytes" }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let payload = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                sendto(fd, payload, payload.count, Int32(MSG_NOSIGNAL), sa, length)
            }
        }
        return sent == payload.count ? nil : String(cString: strerror(errno))
    }
}
