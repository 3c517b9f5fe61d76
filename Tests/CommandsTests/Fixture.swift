import Commands

/// A small command tree exercising every declaration kind.
enum Fixture {
    static let concurrency = Declare.value("concurrency", "N", .integer(in: 1...4096), default: 64, help: "items in flight")
    static let lease = Declare.value("lease-seconds", "S", .seconds(in: 1...3600), default: .seconds(30), help: "lease length")
    static let share = Declare.option("share", "F", .fraction, help: "a share")
    static let latency = Declare.option("latency-ms", "MS", .number(in: 0...600_000), help: "latency")
    static let format = Declare.option("format", "FMT", .choice(["json", "text"]), help: "output format")
    static let team = Declare.option("team-id", "T", .string, help: "the team", environment: ["SIWA_TEAM_ID"])
    static let who = Declare.option("created-by", "NAME", .string, help: "creator", defaultText: "$USER")
    static let job = Declare.option("job", "N", .integer(in: 1...Int.max), help: "the job", required: true)
    static let client = Declare.repeated("client-id", "C", .string, help: "an audience", required: true)
    static let drain = Declare.switch("drain", help: "exit when idle")
    static let file = Declare.argument("FILE", .string, help: "the input")
    static let count = Declare.argument("COUNT", .integer(in: 1...10), help: "how many", required: false)

    static let work = CommandSpec(
        "work", abstract: "run the worker", discussion: "Runs until stopped.",
        options: [concurrency, lease, share, latency, format, team, who, drain],
        environment: [EnvironmentVariable("DATABASE_URL", "where PostgreSQL is")])
    static let load = CommandSpec("load", abstract: "load a file", arguments: [file, count], options: [job, drain])
    static let verify = CommandSpec("verify", abstract: "verify a token", options: [client])
    static let transfer = CommandSpec("transfer", abstract: "app transfer", subcommands: [load, verify])
    static let root = CommandSpec("tool", abstract: "A test tool.", subcommands: [work, transfer])

    static let parser = CommandParser(root: root)

    /// The parsed arguments, or nil when `words` asked for help.
    static func parse(_ words: [String]) throws(UsageError) -> ParsedArguments? {
        guard case .run(let arguments) = try parser.parse(words) else { return nil }
        return arguments
    }

    /// The usage error's message for `words`, or nil when they parse.
    static func error(_ words: [String]) -> String? {
        do {
            _ = try parser.parse(words)
            return nil
        } catch {
            return error.message
        }
    }
}
