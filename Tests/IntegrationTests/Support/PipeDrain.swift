import Foundation

/// Reads the read end of a child process's pipe until end of file, on a thread of its own, with
/// blocking `read(2)` calls, handing each chunk to `sink` as it arrives.
///
/// Not `FileHandle.readabilityHandler`: that arms a libdispatch read source on the descriptor, and
/// on Linux tearing the source down can race the descriptor's close and leave a freed epoll
/// muxnote behind, which crashes libdispatch's manager thread (SIGSEGV in
/// `_dispatch_event_loop_drain`; swift-corelibs-libdispatch issue 949). It took the whole test
/// process down once in CI. A blocking read never registers the descriptor with libdispatch.
final class PipeDrain: @unchecked Sendable {   // `finished` is guarded by `lock`
    private let lock = NSLock()
    private var finished = false

    /// Starts reading `handle` (kept open until end of file) on a new thread.
    init(_ handle: FileHandle, sink: @escaping @Sendable (Data) -> Void) {
        let thread = Thread { [self] in
            let fd = handle.fileDescriptor
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    sink(Data(chunk[0..<n]))
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    break   // end of file (every writer closed it), or a read error
                }
            }
            withExtendedLifetime(handle) {}
            lock.lock(); finished = true; lock.unlock()
        }
        thread.name = "pipe-drain"
        thread.start()
    }

    /// The reader has seen end of file.
    var isFinished: Bool { lock.lock(); defer { lock.unlock() }; return finished }

    /// Waits (polling, without blocking a thread) until end of file, or `timeout` at most: a grandchild that
    /// inherited the pipe may hold it open after the child exits.
    /// - Returns: whether end of file was seen.
    @discardableResult
    func finish(timeout: Duration = .seconds(30)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !isFinished {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }
}
