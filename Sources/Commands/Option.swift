/// What the parser and the help know about one `--name` option, whatever its value type.
public struct OptionSpec: Sendable {
    /// The name without the leading `--`, e.g. `concurrency`.
    public let name: String
    /// The value's placeholder in help and messages, e.g. `N`; nil for a switch (no value).
    public let placeholder: String?
    /// One line saying what the option does.
    public let help: String
    /// Accepted values, e.g. `1...4096`; nil for free text.
    public let summary: String?
    /// The default as help shows it, e.g. `64`, `$USER or cli`; nil when there is none.
    public let defaultText: String?
    /// Environment variables used when the option is absent, e.g. `SIWA_TEAM_ID`.
    public let environment: [String]
    /// The parser refuses a command line without it.
    public let isRequired: Bool
    /// It may be given more than once; every value is kept.
    public let isRepeatable: Bool
    /// Converts one value's text; nil for a switch.
    let convert: (@Sendable (String) throws(ValueError) -> any Sendable)?

    public var isSwitch: Bool { placeholder == nil }

    /// `--name N` (or `--name` for a switch), as in usage lines and messages.
    public var label: String { placeholder.map { "--\(name) \($0)" } ?? "--\(name)" }
}

/// Anything a command lists among its options.
public protocol OptionDeclaration: Sendable {
    var spec: OptionSpec { get }
}

/// A declared option whose parsed value is a `Value`: `T?` (optional or required), `T` (with a
/// default), `Bool` (a switch) or `[T]` (repeatable). Declare with the `Declare` factories and read
/// with `ParsedArguments[option]`.
public struct Option<Value: Sendable>: OptionDeclaration {
    public let spec: OptionSpec
    /// From the converted values given, in order (none when absent), to the value.
    let resolve: @Sendable ([any Sendable]) -> Value
}

/// The factories for options and positional arguments.
public enum Declare {
    /// `--name VALUE`, absent = nil. With `required`, the parser refuses a command line without it
    /// (read it with `ParsedArguments.required(_:)`). Given twice, the last value counts.
    /// - Parameters:
    ///   - environment: variables the command uses instead when the option is absent (help only).
    ///   - defaultText: what the command uses when it is absent, for help (e.g. `$USER or cli`).
    public static func option<T>(_ name: String, _ placeholder: String, _ type: ValueType<T>, help: String,
                                   environment: [String] = [], defaultText: String? = nil,
                                   required: Bool = false) -> Option<T?> {
        Option(spec: spec(name, placeholder, type, help, defaultText, environment, required, false)) { $0.last as? T }
    }

    /// `--name VALUE` with a default used when it is absent (shown in help).
    public static func value<T>(_ name: String, _ placeholder: String, _ type: ValueType<T>, default value: T,
                                help: String, environment: [String] = []) -> Option<T> {
        Option(spec: spec(name, placeholder, type, help, type.describe(value), environment, false, false)) {
            ($0.last as? T) ?? value
        }
    }

    /// `--name VALUE` that may repeat; every value is kept, in order.
    public static func repeated<T>(_ name: String, _ placeholder: String, _ type: ValueType<T>, help: String,
                                   required: Bool = false) -> Option<[T]> {
        Option(spec: spec(name, placeholder, type, help, nil, [], required, true)) { $0.compactMap { $0 as? T } }
    }

    /// `--name` without a value: true when given.
    public static func `switch`(_ name: String, help: String) -> Option<Bool> {
        Option(spec: OptionSpec(name: name, placeholder: nil, help: help, summary: nil, defaultText: nil, environment: [],
                                isRequired: false, isRepeatable: false, convert: nil)) { !$0.isEmpty }
    }

    private static func spec<T>(_ name: String, _ placeholder: String, _ type: ValueType<T>, _ help: String,
                                _ defaultText: String?, _ environment: [String], _ required: Bool,
                                _ repeatable: Bool) -> OptionSpec {
        OptionSpec(name: name, placeholder: placeholder, help: help, summary: type.summary, defaultText: defaultText,
                   environment: environment, isRequired: required, isRepeatable: repeatable,
                   convert: { (text: String) throws(ValueError) -> any Sendable in try type(text) })
    }
}

/// What the parser and the help know about one positional argument.
public struct ArgumentSpec: Sendable {
    /// The placeholder in usage and messages, e.g. `FILE`, `N`, `TOKEN`.
    public let name: String
    public let help: String
    /// Accepted values, e.g. `>= 1`; nil for free text.
    public let summary: String?
    /// The parser refuses a command line without it.
    public let isRequired: Bool
    let convert: @Sendable (String) throws(ValueError) -> any Sendable
}

/// Anything a command lists among its positional arguments.
public protocol ArgumentDeclaration: Sendable {
    var spec: ArgumentSpec { get }
}

/// A declared positional argument whose parsed value is `Value` (`T?`; a required one is read
/// with `ParsedArguments.required(_:)`). Arguments are matched in declaration order.
public struct Argument<Value: Sendable>: ArgumentDeclaration {
    public let spec: ArgumentSpec
    let resolve: @Sendable ((any Sendable)?) -> Value
}

extension Declare {
    /// A positional argument; required unless `required: false`.
    public static func argument<T>(_ name: String, _ type: ValueType<T>, help: String,
                                     required: Bool = true) -> Argument<T?> {
        Argument<T?>(spec: ArgumentSpec(name: name, help: help, summary: type.summary, isRequired: required,
                                        convert: { (text: String) throws(ValueError) -> any Sendable in try type(text) })) {
            $0 as? T
        }
    }
}
