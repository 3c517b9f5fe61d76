/// Help text generated from the declarations: the root's command list, a group's subcommands,
/// and a command's usage line, arguments, options (help, accepted values, default, environment
/// variables, required, repeatable) and environment variables.
public struct HelpFormatter: Sendable {
    /// The program name at the start of usage lines, e.g. `siwa-jobs`.
    public let programName: String
    /// Lines are wrapped to this many columns.
    public let width: Int

    public init(programName: String, width: Int = 100) {
        self.programName = programName
        self.width = width
    }

    /// The help of the last command of `path` (the root first).
    public func help(for path: [CommandSpec]) -> String {
        guard let command = path.last else { return "" }
        let words = ([programName] + path.dropFirst().map(\.name)).joined(separator: " ")
        var sections: [String] = []
        if command.subcommands.isEmpty {
            sections.append("usage: " + usageLine(for: path))
        } else {
            sections.append("usage: \(words) <\(path.count == 1 ? "command" : "subcommand")> [options]")
        }
        let about = [command.abstract, command.discussion].filter { !$0.isEmpty }
        if !about.isEmpty { sections.append(about.map { wrap($0, indent: 0) }.joined(separator: "\n\n")) }
        if !command.subcommands.isEmpty {
            let rows = listing(command, depth: path.count == 1 ? 2 : 1)
            sections.append((path.count == 1 ? "commands:\n" : "subcommands:\n") + table(rows))
            sections.append("run '\(words) <\(path.count == 1 ? "command" : "subcommand")> --help' for its options.")
        }
        if !command.arguments.isEmpty {
            sections.append("arguments:\n" + table(command.arguments.map { ($0.name, annotate($0.help, [$0.summary,
                                                                          $0.isRequired ? nil : "optional"])) }))
        }
        if command.subcommands.isEmpty {
            var rows = command.options.map { option in
                (option.label, annotate(option.help, [
                    option.summary, option.defaultText.map { "default \($0)" },
                    option.environment.isEmpty ? nil : "env " + option.environment.joined(separator: ", "),
                    option.isRequired ? "required" : nil, option.isRepeatable ? "repeatable" : nil,
                ]))
            }
            rows.append(("-h, --help", "show this help"))
            sections.append("options:\n" + table(rows))
        }
        if !command.environment.isEmpty {
            sections.append("environment:\n" + table(command.environment.map { ($0.name, $0.help) }))
        }
        return sections.joined(separator: "\n\n")
    }

    /// `siwa-jobs transfer import-csv FILE --team-id T --transfer-date D [options]`: the words, the
    /// required options, the arguments (optional ones in brackets), then `[options]` if any are optional.
    public func usageLine(for path: [CommandSpec]) -> String {
        guard let command = path.last else { return programName }
        var parts = [programName] + path.dropFirst().map(\.name)
        parts += command.arguments.map { $0.isRequired ? $0.name : "[\($0.name)]" }
        parts += command.options.filter(\.isRequired).map(\.label)
        if command.options.contains(where: { !$0.isRequired }) { parts.append("[options]") }
        return parts.joined(separator: " ")
    }

    private func listing(_ group: CommandSpec, depth: Int) -> [(String, String)] {
        group.subcommands.flatMap { sub -> [(String, String)] in
            guard depth > 1, !sub.subcommands.isEmpty else { return [(sub.name, sub.abstract)] }
            return listing(sub, depth: depth - 1).map { ("\(sub.name) \($0.0)", $0.1) }
        }
    }

    private func annotate(_ help: String, _ notes: [String?]) -> String {
        let present = notes.compactMap { $0 }
        return present.isEmpty ? help : help + " (" + present.joined(separator: "; ") + ")"
    }

    /// Two columns: the left padded to a common width (at most 32), the right wrapped under itself.
    private func table(_ rows: [(String, String)]) -> String {
        let column = min(rows.map(\.0.count).max() ?? 0, 32) + 4
        return rows.map { left, right in
            let head = "  " + left
            let body = wrap(right, indent: column)
            let bodyText = String(body.dropFirst(column))
            if head.count + 2 > column { return head + "\n" + body }
            return head + String(repeating: " ", count: column - head.count) + bodyText
        }.joined(separator: "\n")
    }

    /// `text` wrapped to `width` columns, every line indented by `indent` spaces.
    private func wrap(_ text: String, indent: Int) -> String {
        let pad = String(repeating: " ", count: indent)
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            for word in paragraph.split(separator: " ") {
                if !line.isEmpty, indent + line.count + 1 + word.count > width {
                    lines.append(pad + line)
                    line = String(word)
                } else {
                    line += (line.isEmpty ? "" : " ") + word
                }
            }
            lines.append(pad + line)
        }
        return lines.joined(separator: "\n")
    }
}
