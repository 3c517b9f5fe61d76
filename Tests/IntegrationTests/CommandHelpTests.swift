import Foundation
import Testing

/// The real binary prints each command's own help (generated from its declaration).
@Suite(.timeLimit(.minutes(20))) struct CommandHelpTests {
    @Test(arguments: [
        (["transfer", "export", "--help"], ["usage: siwa-jobs transfer export", "--retry-failed", "--max-attempts", "--canary"]),
        (["transfer", "export-csv", "-h"], ["--force", "--allow-incomplete"]),
        (["transfer", "import", "--help"], ["--retry-failed", "--max-attempts"]),
        (["work", "--help"], ["--pool-size", "--flush-max", "--concurrency", "default 64", "1...4096", "SIWA_TOKEN_KEY_FILE"]),
        (["notifications", "send", "--help"], ["--subs-file"]),
        (["sandbox", "--help"], ["--fault-429", "--fault-5xx", "--latency", "--latency-ms", "--stall-seconds"]),
        (["help", "token", "verify"], ["--client-id", "repeatable", "--jwks"]),
        (["--help"], ["enqueue refresh-validation", "transfer import-csv", "notifications serve", "sandbox"]),
    ])
    func helpIsTheCommandsOwn(_ words: [String], _ expected: [String]) async throws {
        let run = try await BinaryProcess.run(words, environment: ProcessInfo.processInfo.environment)
        #expect(run.status == 0, "\(run.stderr)")
        for text in expected { #expect(run.stdout.contains(text), "\(words): \(text)\n\(run.stdout)") }
    }

    @Test func noCommandPrintsTheUsageOnStderr() async throws {
        let run = try await BinaryProcess.run([], environment: ProcessInfo.processInfo.environment)
        #expect(run.status == 64 && run.stderr.contains("usage: siwa-jobs <command>") && run.stdout.isEmpty)
        let unknown = try await BinaryProcess.run(["transfer", "bogus"], environment: ProcessInfo.processInfo.environment)
        #expect(unknown.status == 64 && unknown.stderr.contains("transfer: unknown subcommand 'bogus'"), "\(unknown.stderr)")
        #expect(unknown.stderr.contains("run 'siwa-jobs transfer --help' for usage"))
    }
}
