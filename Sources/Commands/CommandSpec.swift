/// An environment variable a command reads, for its help.
public struct EnvironmentVariable: Sendable, Equatable {
    /// E.g. `SIWA_TEAM_ID`, or several alternatives as one entry: `SIWA_KEY_FILE | SIWA_PRIVATE_KEY`.
    public let name: String
    public let help: String

    public init(_ name: String, _ help: String) {
        self.name = name
        self.help = help
    }
}

/// One command's declaration: its name, a one-line abstract, positional arguments, options with
/// their types, defaults and ranges, the environment variables it reads, and its subcommands.
/// Usage errors and `--help` are generated from it, so the help cannot drift from the flags.
///
/// A command with subcommands (`transfer`) is a group: its words name a subcommand, and its own
/// arguments and options are not used.
public struct CommandSpec: Sendable {
    public let name: String
    /// One line, shown in the parent's command list and at the top of the help.
    public let abstract: String
    /// Paragraphs shown after the abstract in the command's own help ("" for none).
    public let discussion: String
    public let arguments: [ArgumentSpec]
    public let options: [OptionSpec]
    public let environment: [EnvironmentVariable]
    public let subcommands: [CommandSpec]

    public init(_ name: String, abstract: String, discussion: String = "",
                arguments: [any ArgumentDeclaration] = [], options: [any OptionDeclaration] = [],
                environment: [EnvironmentVariable] = [], subcommands: [CommandSpec] = []) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.arguments = arguments.map(\.spec)
        self.options = options.map(\.spec)
        self.environment = environment
        self.subcommands = subcommands
    }

    public func subcommand(named name: String) -> CommandSpec? {
        subcommands.first { $0.name == name }
    }

    func option(named name: String) -> OptionSpec? {
        options.first { $0.name == name }
    }
}
