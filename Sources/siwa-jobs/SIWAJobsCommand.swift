import Clocks
import Commands
import Foundation
import SIWAJobs

/// `siwa-jobs`: thin CLI. Parse the words against the declared commands (`CommandTree`), check
/// the configuration the command needs, run it, and map what it returned or threw to an exit
/// status (`ExitCode`, the only place that decides one).
@main
struct SIWAJobsCommand {
    static func main() async {
        // A closed stdout/stderr pipe (log collector gone) must not kill a worker mid-run: writes
        // fail instead, and the worker still stops gracefully and releases its leases.
        signal(SIGPIPE, SIG_IGN)
        let configuration = SIWAConfiguration(environment: ProcessInfo.processInfo.environment)
        let code = await run(Array(CommandLine.arguments.dropFirst()), configuration: configuration)
        exit(code.rawValue)
    }

    static func run(_ words: [String], configuration: SIWAConfiguration, clock: any WallClock = SystemClock()) async -> ExitCode {
        let help = HelpFormatter(programName: "siwa-jobs")
        guard !words.isEmpty else {
            try? FileHandle.standardError.write(contentsOf: Data((help.help(for: [CommandTree.root]) + "\n").utf8))
            return .usage
        }
        do {
            switch try CommandParser(root: CommandTree.root).parse(words) {
            case .help(let path):
                say(help.help(for: path))
                return .success
            case .run(let arguments):
                guard let command = CommandTree.command(at: arguments.path) else {
                    throw UsageError("unknown command '\(arguments.path.joined(separator: " "))'")
                }
                if command.checksLogging { try configuration.validateLogging() }
                if command.usesDatabase { try configuration.validateDatabaseURL() }
                return try await command.run(arguments, CommandContext(configuration: configuration, clock: clock))
            }
        } catch {
            let (code, lines) = ExitCode.of(error, database: configuration.postgres.redactedDescription)
            lines.forEach(complain)
            return code
        }
    }
}
