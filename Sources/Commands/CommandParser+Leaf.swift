import SIWACore

extension CommandParser {
    /// Parses the words of the command at the end of `path` (options and positionals).
    func parseLeaf(_ words: [String], path: [CommandSpec]) throws(UsageError) -> ParsedArguments {
        let names = path.dropFirst().map(\.name)
        let command = path.last ?? root
        let where_ = names.isEmpty ? command.name : names.joined(separator: " ")
        func fail(_ message: String) -> UsageError { UsageError(message, commandPath: names) }

        var values: [String: [any Sendable]] = [:]
        var positionals: [String] = []
        var index = 0
        var optionsEnded = false
        while index < words.count {
            let word = words[index]
            index += 1
            if optionsEnded || !word.hasPrefix("--") {
                positionals.append(word)
                continue
            }
            if word == "--" {
                optionsEnded = true
                continue
            }
            var name = String(word.dropFirst(2))
            var inline: String?
            if let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = command.option(named: name) else {
                let known = command.options.map { "--" + $0.name }.sorted().joined(separator: ", ")
                let shownName = name.unicodeScalars.count <= 32 ? "--" + PrintableText.escapedPrefix(name)
                    : "of \(name.unicodeScalars.count) characters (not shown)"
                throw fail("unknown option \(shownName)" + (known.isEmpty ? "" : " (known: \(known))"))
            }
            guard let convert = option.convert else {
                guard inline == nil else { throw fail("--\(name) takes no value") }
                values[name, default: []].append(true)
                continue
            }
            // A value option given twice is refused rather than the last one silently winning
            // (`--team-id A ... --team-id B` in a cron line); the values are not echoed, as one
            // may be a secret (`--code`). Repeatable options keep every value.
            guard option.isRepeatable || values[name] == nil else {
                throw fail("--\(name) is given more than once; give it once")
            }
            let text: String
            if let inline {
                text = inline
            } else {
                guard index < words.count, !words[index].hasPrefix("--") else { throw fail("--\(name) needs a value") }
                text = words[index]
                index += 1
            }
            do {
                values[name, default: []].append(try convert(text))
            } catch {
                throw fail(Self.message(for: error, label: "--\(name)", text: text))
            }
        }

        var arguments: [String: any Sendable] = [:]
        for (position, spec) in command.arguments.enumerated() {
            guard position < positionals.count else {
                if spec.isRequired { throw fail("\(where_): \(spec.name) is required") }
                continue
            }
            do {
                arguments[spec.name] = try spec.convert(positionals[position])
            } catch {
                throw fail("\(where_): " + Self.message(for: error, label: spec.name, text: positionals[position]))
            }
        }
        if positionals.count > command.arguments.count {
            throw fail("\(where_): unexpected argument \(Self.shownArgument(positionals[command.arguments.count]))")
        }
        if let missing = command.options.first(where: { $0.isRequired && values[$0.name] == nil }) {
            throw fail("\(where_): \(missing.label) is required")
        }
        return ParsedArguments(path: names, command: command, values: values, arguments: arguments)
    }

    static func message(for error: ValueError, label: String, text: String) -> String {
        switch error.kind {
        case .empty: "\(label): empty value"
        case .invalid: "\(label): expected \(error.expected), got \(shown(error.redacted ?? text))"
        }
    }

    /// A refused value as the message quotes it: control characters escaped (a newline or an
    /// escape sequence never reaches the terminal raw) and at most 60 characters.
    static func shown(_ text: String) -> String {
        "'\(PrintableText.escapedPrefix(text))'" + PrintableText.lengthNote(text)
    }

    /// An argument nobody expected, quoted only when short: a long one is more likely a token or an
    /// authorization code pasted in the wrong place, and is described instead of echoed.
    static func shownArgument(_ text: String) -> String {
        text.unicodeScalars.count <= 32 ? shown(text)
            : "of \(text.unicodeScalars.count) characters (not shown: it may be a token or a code; options start with --)"
    }
}
