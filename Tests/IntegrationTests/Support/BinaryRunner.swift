import Foundation
import Testing

/// Runs the built `siwa-jobs` binary as a real subprocess, capturing stdout and stderr.
final class BinaryProcess: @unchecked Sendable {   // Process is used from one test task at a time
    let process = Process()
    private let stdoutPipe = Pipe()
    private let stderrPipe = Pipe()
    private let output = OutputBuffer()
    private var drains: [PipeDrain] = []

    /// The binary next to the test bundle (`.build/debug`), or `SIWA_JOBS_BIN`.
    static var binaryPath: String {
        if let override = ProcessInfo.processInfo.environment["SIWA_JOBS_BIN"] { return override }
        let runner = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var dir = runner.deletingLastPathComponent()
        while dir.path != "/" {
            let candidate = dir.appendingPathComponent("siwa-jobs").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return ".build/debug/siwa-jobs"
    }

    init(_ arguments: [String], environment: [String: String]) throws {
        process.executableURL = URL(fileURLWithPath: Self.binaryPath)
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        process.standardInput = FileHandle.nullDevice
        let buffer = output
        try process.run()
        drains = [PipeDrain(stdoutPipe.fileHandleForReading) { buffer.append(stdout: $0) },
                  PipeDrain(stderrPipe.fileHandleForReading) { buffer.append(stderr: $0) }]
    }

    /// Runs to completion and returns (exit status, stdout, stderr).
    static func run(_ arguments: [String], environment: [String: String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let p = try BinaryProcess(arguments, environment: environment)
        let status = await p.wait()
        return (status, p.stdout, p.stderr)
    }

    /// Waits for the process to exit. `timeout` is a liveness bound, not a timing check: past it
    /// the process is killed (SIGKILL) and a test issue is recorded naming its arguments, so a
    /// process that never exits fails its test instead of hanging CI. A cancelled wait (a test's
    /// `.timeLimit` ran out) kills it at once the same way.
    func wait(timeout: Duration = .seconds(600)) async -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            let cancelled = Task.isCancelled
            if cancelled || ContinuousClock.now >= deadline {
                kill(process.processIdentifier, SIGKILL)
                let why = cancelled ? "was still running when the test was cancelled" : "did not exit within \(timeout)"
                Issue.record("siwa-jobs \(process.arguments?.joined(separator: " ") ?? "") \(why); killed. stderr: \(stderr.suffix(800))")
                process.waitUntilExit()
                break
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        for drain in drains { await drain.finish() }
        return process.terminationStatus
    }

    func signal(_ signo: Int32) { kill(process.processIdentifier, signo) }

    var stdout: String { output.stdout }
    var stderr: String { output.stderr }
}

final class OutputBuffer: @unchecked Sendable {   // guarded by lock
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()
    func append(stdout data: Data) { lock.lock(); out.append(data); lock.unlock() }
    func append(stderr data: Data) { lock.lock(); err.append(data); lock.unlock() }
    var stdout: String { lock.lock(); defer { lock.unlock() }; return String(decoding: out, as: UTF8.self) }
    var stderr: String { lock.lock(); defer { lock.unlock() }; return String(decoding: err, as: UTF8.self) }
}
