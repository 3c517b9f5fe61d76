/// What a command line asks for.
public enum Invocation: Sendable {
    /// `--help`, `-h` or `help [command ...]`: the help of the last command of `path` (the root first).
    case help(path: [CommandSpec])
    /// Run a command with these arguments.
    case run(ParsedArguments)
}

/// Parses command-line words against a declared command tree.
///
/// Accepted syntax: subcommand words (the first word naming a subcommand is taken, and any
/// words before it are moved after it, so `transfer --job 1 status` still works); then `--name value`, `--name=value`, `--switch` and
/// positionals in any order; `--` ends the options. A value that starts with `--` is taken as a
/// missing value. `--help` or `-h` anywhere asks for the help of the command named so far;
/// `help transfer export` does the same.
public struct CommandParser: Sendable {
    public let root: CommandSpec

    public init(root: CommandSpec) {
        self.root = root
    }

    /// - Throws: `UsageError` naming the flag or argument: an unknown subcommand or option, a
    ///   missing value, a switch given a value, a value of the wrong shape or out of range, a
    ///   missing required option or argument, or an unexpected argument.
    public func parse(_ words: [String]) throws(UsageError) -> Invocation {
        if words.first == "help", root.subcommand(named: "help") == nil {
            return .help(path: try resolve(Array(words.dropFirst())))
        }
        let wantsHelp = words.contains("--help") || words.contains("-h")
        var path = [root]
        var current = root
        var remaining = words
        var leading: [String] = []
        while !current.subcommands.isEmpty {
            guard let index = remaining.firstIndex(where: { current.subcommand(named: $0) != nil }),
                  let next = current.subcommand(named: remaining[index]) else {
                if wantsHelp { return .help(path: path) }
                throw missingSubcommand(path, given: Self.firstNonOption(remaining))
            }
            leading += remaining[..<index]
            remaining = Array(remaining[(index + 1)...])
            path.append(next)
            current = next
        }
        if wantsHelp { return .help(path: path) }
        return .run(try parseLeaf(leading + remaining, path: path))
    }

    /// The commands named by `words` (the root first), for `help WORDS`.
    private func resolve(_ words: [String]) throws(UsageError) -> [CommandSpec] {
        var path = [root]
        var current = root
        for word in words where !word.hasPrefix("-") {
            guard let next = current.subcommand(named: word) else { throw missingSubcommand(path, given: word) }
            path.append(next)
            current = next
        }
        return path
    }

    /// The first word that is neither an option nor (probably) an option's value.
    private static func firstNonOption(_ words: [String]) -> String? {
        for (index, word) in words.enumerated() where !word.hasPrefix("-") {
            let previous = index > 0 ? words[index - 1] : ""
            if previous.hasPrefix("--") && !previous.contains("=") { continue }
            return word
        }
        return nil
    }

    private func missingSubcommand(_ path: [CommandSpec], given: String?) -> UsageError {
        let names = path.dropFirst().map(\.name)
        let prefix = names.isEmpty ? "" : names.joined(separator: " ") + ": "
        let choices = (path.last?.subcommands ?? []).map(\.name).joined(separator: ", ")
        guard let given else { return UsageError(prefix + "expected a subcommand: \(choices)", commandPath: names) }
        let what = names.isEmpty ? "command" : "subcommand"
        return UsageError(prefix + "unknown \(what) \(Self.shownArgument(given)) (expected one of: \(choices))", commandPath: names)
    }
}
