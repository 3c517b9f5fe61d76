import Dispatch
import Foundation

/// Entry point for `siwa-jobs sandbox [flags]`.
public enum SandboxMain {
    /// Parses flags, starts the sandbox, prints exactly one line to stdout
    /// (`sandbox listening on http://127.0.0.1:PORT`), and serves until SIGTERM or SIGINT.
    ///
    /// - Returns: exit status: 0 after a clean stop (or `--help`), 64 for a usage error (message on
    ///   stderr), 69 if the server could not start.
    public static func run(arguments: [String]) async -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            writeLine(SandboxConfiguration.usage, to: FileHandle.standardOutput)
            return 0
        }
        let configuration: SandboxConfiguration
        do {
            configuration = try SandboxConfiguration.parse(arguments: arguments)
        } catch {
            writeLine("siwa-jobs sandbox: \(error)\n\(SandboxConfiguration.usage)", to: FileHandle.standardError)
            return 64
        }
        let server = SandboxServer(configuration: configuration)
        do {
            try server.start()
        } catch {
            writeLine("siwa-jobs sandbox: \(error)", to: FileHandle.standardError)
            return 69
        }
        writeLine("sandbox listening on \(server.baseURL)", to: FileHandle.standardOutput)
        await waitForTermination()
        server.stop()
        return 0
    }

    private static func writeLine(_ text: String, to handle: FileHandle) {
        handle.write(Data((text + "\n").utf8))
    }

    /// Suspends until SIGTERM or SIGINT arrives.
    private static func waitForTermination() async {
        let queue = DispatchQueue(label: "sandbox.signals")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = SignalOnce(continuation)
            var sources: [any DispatchSourceSignal] = []
            for sig in [SIGTERM, SIGINT] {
                signal(sig, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
                source.setEventHandler { @Sendable in once.fire() }
                source.resume()
                sources.append(source)
            }
            once.keep(sources)
        }
    }
}

/// Resumes a continuation exactly once and keeps the signal sources alive until then.
private final class SignalOnce: @unchecked Sendable {
    // Only touched on the signal queue (fire) and once before any signal can be delivered (keep);
    // the lock makes the hand-over explicit.
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Void, Never>?
    private var sources: [any DispatchSourceSignal] = []

    init(_ continuation: CheckedContinuation<Void, Never>) { self.continuation = continuation }

    func keep(_ sources: [any DispatchSourceSignal]) {
        lock.withLock { self.sources = sources }
    }

    func fire() {
        let c: CheckedContinuation<Void, Never>? = lock.withLock {
            defer { continuation = nil }
            for s in sources { s.cancel() }
            sources = []
            return continuation
        }
        c?.resume()
    }
}
