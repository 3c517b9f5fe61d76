import Foundation
import Testing

/// `siwa-jobs sandbox --tls` as a process, as the demo and the benchmarks run it.
@Suite(.timeLimit(.minutes(2))) struct SandboxProcessTests {
    /// Stopped the way scripts stop it (SIGTERM), by Ctrl-C (SIGINT) or by its terminal closing
    /// (SIGHUP), the sandbox exits 0 and takes the directory it
    /// made for its throwaway CA with it, so none pile up under the temporary directory.
    @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
    func aStoppedTLSSandboxRemovesTheCADirectoryItMade(signal: Int32) async throws {
        let sandbox = try BinaryProcess(["sandbox", "--tls", "--port", "0"], environment: ProcessInfo.processInfo.environment)
        var caFile: String?
        try await Eventually.wait("the sandbox listening and naming its CA file", while: sandbox) {
            guard sandbox.stdout.contains("listening on https://") else { return false }
            caFile = sandbox.stdout.split(separator: "\n").first { $0.hasPrefix("sandbox CA file: ") }
                .map { String($0.dropFirst("sandbox CA file: ".count)) }
            return true
        }
        let file = try #require(caFile, "stdout: \(sandbox.stdout)")
        let dir = URL(fileURLWithPath: file).deletingLastPathComponent().path
        #expect(FileManager.default.fileExists(atPath: file))
        sandbox.signal(signal)
        #expect(await sandbox.wait() == 0, "stderr: \(sandbox.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir), "\(dir) is left behind")
    }
}
