/// A command line that does not match its command's declaration: an unknown option, a missing
/// value, a number out of range, a missing required option or argument, an unexpected argument.
/// The CLI maps it to exit 64 (`EX_USAGE`).
///
/// `description` names the flag or argument and what was expected, e.g.
/// `--concurrency: expected a whole number from 1 to 4096, got 'lots'`.
public struct UsageError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What is wrong, safe to print.
    public var message: String
    /// The command words the error belongs to, e.g. `["transfer", "export"]` (empty: the root),
    /// so the CLI can point at `siwa-jobs transfer export --help`.
    public var commandPath: [String]

    public init(_ message: String, commandPath: [String] = []) {
        self.message = message
        self.commandPath = commandPath
    }

    public var description: String { message }
}

/// Why one option or argument value was refused: what was expected instead. The parser turns it
/// into a `UsageError` naming the flag and quoting the value.
public struct ValueError: Error, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// The text does not have the expected shape (`expected` says which).
        case invalid
        /// The text is empty or only whitespace.
        case empty
    }

    public var kind: Kind
    /// E.g. `a whole number from 1 to 4096`.
    public var expected: String

    /// The value as the message may show it, when the value itself must not be (e.g. a URL with
    /// its password replaced by `***`); nil shows the value.
    public var redacted: String?

    public init(expected: String, kind: Kind = .invalid, redacted: String? = nil) {
        self.kind = kind
        self.expected = expected
        self.redacted = redacted
    }
}
