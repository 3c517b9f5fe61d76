/// A usage error: names the flag or argument and says what was expected. Exit code 64.
struct UsageError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Parsed command-line words of one subcommand: `--flag value`, `--flag=value`, `--switch`, positionals.
/// Unknown flags are refused by name.
struct Arguments {
    private(set) var values: [String: String] = [:]
    private(set) var switches: Set<String> = []
    private(set) var positionals: [String] = []

    /// - Parameters:
    ///   - valueFlags: flags that take a value (without the leading `--`).
    ///   - switchFlags: flags that take none.
    init(_ words: [String], valueFlags: Set<String>, switchFlags: Set<String> = []) throws {
        var i = 0
        while i < words.count {
            let word = words[i]
            if word.hasPrefix("--") {
                var name = String(word.dropFirst(2))
                var inline: String?
                if let eq = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
                if switchFlags.contains(name) {
                    guard inline == nil else { throw UsageError(message: "--\(name) takes no value") }
                    switches.insert(name)
                } else if valueFlags.contains(name) {
                    if let inline {
                        values[name] = inline
                    } else {
                        guard i + 1 < words.count else { throw UsageError(message: "--\(name) needs a value") }
                        i += 1
                        values[name] = words[i]
                    }
                } else {
                    let known = (valueFlags.union(switchFlags)).sorted().map { "--" + $0 }.joined(separator: ", ")
                    throw UsageError(message: "unknown option --\(name)" + (known.isEmpty ? "" : " (known: \(known))"))
                }
            } else {
                positionals.append(word)
            }
            i += 1
        }
    }

    func string(_ name: String) -> String? { values[name] }

    func flag(_ name: String) -> Bool { switches.contains(name) }

    /// A whole number in `range`, or `nil` when absent. Throws a usage error naming the flag.
    func int(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = values[name] else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw UsageError(message: "--\(name): expected a whole number from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
        }
        return value
    }

    /// A number of seconds in `range`, or `nil` when absent.
    func seconds(_ name: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let text = values[name] else { return nil }
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw UsageError(message: "--\(name): expected seconds from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
        }
        return value
    }

    /// A fraction in 0...1, or `nil` when absent.
    func fraction(_ name: String) throws -> Double? {
        guard let text = values[name] else { return nil }
        guard let value = Double(text), (0...1).contains(value) else {
            throw UsageError(message: "--\(name): expected a fraction from 0 to 1, got '\(text)'")
        }
        return value
    }

    func noPositionals(_ command: String) throws {
        if let extra = positionals.first { throw UsageError(message: "\(command): unexpected argument '\(extra)'") }
    }
}
