import Foundation
import Testing
import TestSupport

/// The outside tools the operability tests use: `promtool` (Debian `prometheus`) and headless
/// `chromium`. scripts/install-deps.sh installs both; a missing one fails the test loudly, never skips it.
enum OpsTools {
    /// The tool's path, or a failure naming the package to install.
    static func require(_ name: String, package: String) throws -> String {
        for dir in ["/usr/bin", "/usr/local/bin", "/bin"] where FileManager.default.isExecutableFile(atPath: "\(dir)/\(name)") {
            return "\(dir)/\(name)"
        }
        throw TestFailure("\(name) is not installed: install the Debian package '\(package)' (scripts/install-deps.sh does)")
    }

    /// Runs `tool arguments`, feeding `input` on stdin; waits at most `timeout`.
    /// - Returns: the exit status, stdout, and stdout + stderr (for messages).
    static func run(_ tool: String, _ arguments: [String], input: String = "", timeout: Duration = .seconds(90)) async throws
        -> (status: Int32, stdout: String, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let stdin = Pipe(), out = Pipe(), err = Pipe()
        process.standardInput = stdin
        process.standardOutput = out
        process.standardError = err
        let buffer = OutputBuffer()
        try process.run()
        let drains = [PipeDrain(out.fileHandleForReading) { buffer.append(stdout: $0) },
                      PipeDrain(err.fileHandleForReading) { buffer.append(stderr: $0) }]
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now >= deadline {
                process.terminate()
                process.waitUntilExit()
                throw TestFailure("\(tool) \(arguments.joined(separator: " ")) did not finish within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        for drain in drains { await drain.finish() }
        return (process.terminationStatus, buffer.stdout, buffer.stdout + buffer.stderr)
    }

    /// `promtool check metrics` on `text` (it reads the exposition from stdin; lint problems fail it too).
    static func checkMetrics(_ text: String) async throws -> (status: Int32, output: String) {
        let result = try await run(try require("promtool", package: "prometheus"), ["check", "metrics"], input: text)
        return (result.status, result.output)
    }

    /// The DOM of `url` after headless Chromium loaded it (scripts would have run by then).
    static func dumpDOM(_ url: String, profile: URL) async throws -> String {
        let chromium = try require("chromium", package: "chromium")
        let result = try await run(chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                              "--no-first-run", "--user-data-dir=\(profile.path)", "--dump-dom", url])
        guard result.status == 0 else { throw TestFailure("chromium --dump-dom \(url) exited \(result.status): \(result.output.suffix(800))") }
        return result.stdout
    }

    /// GET `path` on 127.0.0.1:`port` (off the cooperative pool: RawHTTP blocks its thread).
    static func get(port: UInt16, path: String, headers: [(String, String)] = []) async throws -> HTTPReply {
        try await Task.detached { try RawHTTP.request(port: port, method: "GET", path: path, headers: headers) }.value
    }

    /// The port in the first stdout line `<prefix>http://127.0.0.1:PORT...` of `process`.
    static func port(announcedBy process: BinaryProcess, prefix: String) async throws -> UInt16 {
        var port: UInt16?
        try await Eventually.wait("'\(prefix)http://...' on stdout", while: process, timeout: .seconds(60)) {
            for line in process.stdout.split(separator: "\n") where line.hasPrefix(prefix + "http://") {
                let rest = line.dropFirst((prefix + "http://").count)
                if let colon = rest.firstIndex(of: ":") {
                    port = UInt16(rest[rest.index(after: colon)...].prefix { $0.isNumber })
                }
            }
            return port != nil
        }
        guard let port else { throw TestFailure("no port announced") }
        return port
    }
}
