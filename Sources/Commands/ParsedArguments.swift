/// One parsed command line: which command, and its option and argument values, already
/// converted and range-checked. Read values with the declarations: `arguments[Self.concurrency]`.
public struct ParsedArguments: Sendable {
    /// The command words below the root, e.g. `["transfer", "export"]`.
    public let path: [String]
    public let command: CommandSpec
    let values: [String: [any Sendable]]
    let arguments: [String: any Sendable]

    /// The option's value: the value given (the last one if given twice), else its default or
    /// nil; every value of a repeatable option; whether a switch was given.
    public subscript<T>(option: Option<T>) -> T {
        option.resolve(values[option.spec.name] ?? [])
    }

    /// The argument's value, or nil when it was not given.
    public subscript<T>(argument: Argument<T>) -> T {
        argument.resolve(arguments[argument.spec.name])
    }

    /// The value of a required option.
    /// - Throws: `UsageError` `<command>: --name N is required` when it is absent (only possible
    ///   when the option was not declared on the command, since the parser checks the others).
    public func required<T>(_ option: Option<T?>) throws(UsageError) -> T {
        guard let value = self[option] else {
            throw UsageError("\(path.joined(separator: " ")): \(option.spec.label) is required", commandPath: path)
        }
        return value
    }

    /// The value of a required positional argument.
    /// - Throws: `UsageError` `<command>: NAME is required` when it is absent.
    public func required<T>(_ argument: Argument<T?>) throws(UsageError) -> T {
        guard let value = self[argument] else {
            throw UsageError("\(path.joined(separator: " ")): \(argument.spec.name) is required", commandPath: path)
        }
        return value
    }

    /// True when the option was given on the command line (a default does not count).
    public func isGiven(_ option: some OptionDeclaration) -> Bool {
        values[option.spec.name] != nil
    }

    /// A usage error belonging to this command, for checks the declaration cannot express (two
    /// options that exclude each other, a value that depends on another).
    public func usageError(_ message: String) -> UsageError {
        UsageError(message, commandPath: path)
    }
}
