import Commands
import Testing
@testable import siwa_jobs

/// Every declared command runs, and its help shows each of its options with its help text.
@Suite struct CommandTreeTests {
    /// Every runnable command's path and declaration.
    static let leaves: [([String], CommandSpec)] = CommandTree.root.subcommands.flatMap { command -> [([String], CommandSpec)] in
        command.subcommands.isEmpty ? [([command.name], command)] : command.subcommands.map { ([command.name, $0.name], $0) }
    }

    @Test func everyDeclaredCommandHasSomethingToRun() {
        #expect(Self.leaves.count == 37)   // + workers, job priority (#9); accounts import|export, tokens rekey, sign-in (#10);
                                           // dashboard, prune, jobs list, job show|pause|retry, results export (#11)
        for (path, spec) in Self.leaves {
            #expect(CommandTree.command(at: path)?.spec.name == spec.name, "\(path)")
        }
        #expect(CommandTree.command(at: ["transfer"]) == nil)
        #expect(CommandTree.command(at: ["transfer", "bogus"]) == nil)
    }

    @Test func eachCommandsHelpListsItsOwnOptionsWithTheirHelp() throws {
        let formatter = HelpFormatter(programName: "siwa-jobs", width: 10_000)   // no wrapping: whole help texts
        for (path, _) in Self.leaves {
            guard case .help(let specs) = try CommandParser(root: CommandTree.root).parse(path + ["--help"]) else {
                Issue.record("\(path): --help did not ask for help")
                continue
            }
            let command = try #require(specs.last)
            #expect(specs.dropFirst().map(\.name) == path)
            let text = formatter.help(for: specs)
            #expect(text.hasPrefix("usage: siwa-jobs " + path.joined(separator: " ")), "\(path)")
            #expect(text.contains(command.abstract), "\(path)")
            for option in command.options {
                #expect(text.contains(option.label) && text.contains(option.help), "\(path): \(option.label)")
            }
        }
    }

    @Test(arguments: [
        (["transfer", "export"], ["--retry-failed", "--max-attempts", "--canary", "--target", "--transfer-date", "--created-by"]),
        (["transfer", "export-csv"], ["--force", "--allow-incomplete", "--job", "--out"]),
        (["transfer", "import-csv"], ["FILE", "--source-team-id", "--transfer-date"]),
        (["transfer", "import"], ["--retry-failed", "--max-attempts", "--canary", "--import"]),
        (["transfer", "status"], ["--job"]),
        (["transfer", "lookup"], ["--transfer-sub", "--team-id"]),
        (["transfer", "release"], ["--job"]),
        (["work"], ["--pool-size", "--flush-max", "--claim-batch", "--lease-seconds", "--grace-seconds", "--poll-seconds",
                    "--drain-horizon-seconds", "--kinds", "--worker-id", "--progress", "--stats", "--ca-file", "SIWA_TEAMS_FILE",
                    "SIWA_CA_FILE"]),
        (["notifications", "send"], ["--subs-file", "--sub", "--count", "--concurrency"]),
        (["notifications", "serve"], ["--port", "--db-timeout-seconds", "--pool-size", "--threads", "--path"]),
        (["token", "verify"], ["TOKEN", "--token-file", "--jwks", "--client-id", "--at", "--nonce", "repeatable"]),
        (["sandbox"], ["--latency", "--latency-ms", "--latency-jitter-ms", "--fault-5xx", "--fault-429", "--fault-reset",
                       "--fault-stall", "--fault-html", "--fault-truncated", "--retry-after", "--stall-seconds", "--tls", "--tls-dir",
                       "--tls-server-name", "--tls-expired"]),
        (["seed"], ["--accounts", "--revoked-fraction", "--sandbox", "--prefix"]),
        (["keygen"], ["--out", "--token-key", "--force"]),
    ])
    func flagsOnceHiddenInTheGlobalUsageAreInTheirCommandsHelp(_ path: [String], _ expected: [String]) throws {
        guard case .help(let specs) = try CommandParser(root: CommandTree.root).parse(path + ["-h"]) else {
            Issue.record("no help")
            return
        }
        let text = HelpFormatter(programName: "siwa-jobs").help(for: specs)
        for word in expected { #expect(text.contains(word), "\(path): \(word)") }
    }

    @Test func theRootHelpListsEveryCommandWithItsAbstract() {
        let text = HelpFormatter(programName: "siwa-jobs", width: 10_000).help(for: [CommandTree.root])
        for (path, spec) in Self.leaves {
            #expect(text.contains("  " + path.joined(separator: " ")) && text.contains(spec.abstract), "\(path)")
        }
        #expect(text.contains("SIWA_TOKEN_KEY_FILE") && text.contains("DATABASE_URL"))
    }
}
