import Clocks
import Commands
import SIWAJobs

/// One runnable command: its declaration (options, arguments, environment, help) and what it
/// does with the parsed arguments. Commands only parse, call a library and print; they return
/// `.success` or a status from `ExitCode`'s mappings, and throw everything else.
protocol Command {
    static var spec: CommandSpec { get }
    /// The command talks to PostgreSQL, so `DATABASE_URL` is checked before it runs. Default true.
    static var usesDatabase: Bool { get }
    /// `SIWA_LOG_LEVEL` and `SIWA_LOG_FORMAT` are checked before it runs. Default true.
    static var checksLogging: Bool { get }
    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode
}

extension Command {
    static var usesDatabase: Bool { true }
    static var checksLogging: Bool { true }
}

/// What every command is given: the configuration read once from the environment, and the clock.
struct CommandContext: Sendable {
    let configuration: SIWAConfiguration
    let clock: any WallClock
}

/// A command finished without doing what was asked: nothing found, refused by the queue, a
/// mismatch. `lines` go to stderr; the exit status follows `kind` (`ExitCode.of(_:)`).
struct CommandFailure: Error {
    enum Kind {
        /// Exit 1.
        case failed
        /// The input was refused (exit 65), e.g. an invalid CSV file.
        case refusedInput
    }

    let kind: Kind
    let lines: [String]

    init(_ lines: String..., kind: Kind = .failed) {
        self.kind = kind
        self.lines = lines
    }

    init(lines: [String], kind: Kind) {
        self.kind = kind
        self.lines = lines
    }
}

/// A server could not start (exit 69): `what` names it, e.g. `notifications serve`.
struct ServiceUnavailable: Error {
    let what: String
    let error: any Error
}
