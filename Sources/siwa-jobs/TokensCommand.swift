import Commands
import Foundation
import SIWAJobs

/// `siwa-jobs tokens rekey`: re-seal every stored refresh token under the current key
/// (`TokenRekey`), with a progress line on stderr about once a second.
enum TokensRekeyCommand: Command {
    static let batchSize = Declare.value("batch-size", "N", .integer(in: 1...100_000), default: 1_000,
                                         help: "accounts per batch (one read and one update statement each)")
    static let json = Declare.switch("json", help: "print the summary as JSON")

    static let spec = CommandSpec(
        "rekey", abstract: "re-encrypt every stored refresh token under the current key (SIWA_TOKEN_KEY_ID)",
        discussion: "Resumable (run it again after a stop) and safe beside running workers, which need the current key and "
            + "SIWA_TOKEN_KEYS_PREVIOUS while it runs. Afterwards doctor shows 0 tokens under the previous keys, which can "
            + "then be removed. Exit 0 when none is left under another key, 1 when tokens were left (unreadable ones are "
            + "named), 78 when stored tokens use a key id that is not configured (nothing is changed).",
        options: [batchSize, json],
        environment: [EnvironmentDocs.database] + EnvironmentDocs.tokenKey + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let keyring = try context.configuration.keyring()
        let started = ContinuousClock.now
        var lastLine = started
        let report = try await Transfer.withPool(context) { pool in
            try await TokenRekey(pool: pool, keyring: keyring, batchSize: arguments[batchSize]).run { progress in
                let now = ContinuousClock.now
                guard now - lastLine >= .seconds(1) else { return }
                lastLine = now
                complain("rekey: \(progress.rekeyed) of \(progress.toRekey) tokens re-encrypted under \(progress.currentKeyID)"
                    + (progress.changedMeanwhile > 0 ? ", \(progress.changedMeanwhile) changed meanwhile" : ""))
            }
        }
        if arguments[json] {
            say(String(decoding: try JSONEncoder.sorted.encode(report), as: UTF8.self))
        } else {
            var line = "rekeyed \(report.rekeyed) of \(report.toRekey) tokens under key id \(report.currentKeyID); "
                + "\(report.remaining) left under other keys"
            if report.changedMeanwhile > 0 { line += "; \(report.changedMeanwhile) were changed by a concurrent writer meanwhile" }
            if report.busy > 0 { line += "; \(report.busy) times a row was busy (locked by a worker) and was taken in a later pass" }
            if report.unreadable > 0 {
                line += "; \(report.unreadable) do not decrypt (accounts \(report.unreadableAccounts.map(String.init).joined(separator: ", ")))"
            }
            say(line)
        }
        return .of(report)
    }
}
