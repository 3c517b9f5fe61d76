/// How the text of one option or argument becomes a value: the conversion, the words used in
/// help (`summary`, e.g. `1...4096`) and how a default is shown.
public struct ValueType<Value: Sendable>: Sendable {
    /// The accepted values in help, e.g. `1...4096`, `0...1`, `json|text`; nil for free text.
    public let summary: String?
    /// How a default value is shown in help, e.g. `30` for `Duration.seconds(30)`.
    public let describe: @Sendable (Value) -> String
    let convert: @Sendable (String) throws(ValueError) -> Value

    /// - Parameters:
    ///   - summary: accepted values for help, or nil.
    ///   - describe: how help shows a default (default `String(describing:)`).
    ///   - convert: the text to a value, throwing `ValueError` saying what was expected.
    public init(summary: String?, describe: @escaping @Sendable (Value) -> String = { String(describing: $0) },
                convert: @escaping @Sendable (String) throws(ValueError) -> Value) {
        self.summary = summary
        self.describe = describe
        self.convert = convert
    }

    /// Converts `text`. - Throws: `ValueError` saying what was expected.
    public func callAsFunction(_ text: String) throws(ValueError) -> Value {
        try convert(text)
    }
}

extension ValueType where Value == String {
    /// Any text that is not empty or only whitespace.
    public static var string: ValueType<String> {
        ValueType(summary: nil) { (text: String) throws(ValueError) -> String in
            guard !text.allSatisfy(\.isWhitespace) else { throw ValueError(expected: "a value", kind: .empty) }
            return text
        }
    }

    /// Any text, the empty string included.
    public static var anyText: ValueType<String> {
        ValueType(summary: nil) { (text: String) throws(ValueError) -> String in text }
    }

    /// One of `choices`, exactly as written.
    public static func choice(_ choices: [String]) -> ValueType<String> {
        ValueType(summary: choices.joined(separator: "|")) { (text: String) throws(ValueError) -> String in
            guard choices.contains(text) else { throw ValueError(expected: "one of \(choices.joined(separator: ", "))") }
            return text
        }
    }
}

extension ValueType where Value == Int {
    /// A whole number in `range`.
    public static func integer(in range: ClosedRange<Int>) -> ValueType<Int> {
        let expected = range.upperBound == Int.max
            ? "a whole number of at least \(range.lowerBound)"
            : "a whole number from \(range.lowerBound) to \(range.upperBound)"
        let summary = range.upperBound == Int.max ? ">= \(range.lowerBound)" : "\(range.lowerBound)...\(range.upperBound)"
        return ValueType(summary: summary) { (text: String) throws(ValueError) -> Int in
            guard let value = Int(text), range.contains(value) else { throw ValueError(expected: expected) }
            return value
        }
    }
}

extension ValueType where Value == Double {
    /// A finite decimal number in `range`, e.g. milliseconds.
    public static func number(in range: ClosedRange<Double>) -> ValueType<Double> {
        let expected = "a number from \(format(range.lowerBound)) to \(format(range.upperBound))"
        return ValueType(summary: "\(format(range.lowerBound))...\(format(range.upperBound))", describe: format) {
            (text: String) throws(ValueError) -> Double in
            guard let value = Double(text), value.isFinite, range.contains(value) else { throw ValueError(expected: expected) }
            return value
        }
    }

    /// A fraction (or probability) from 0 to 1.
    public static var fraction: ValueType<Double> {
        ValueType(summary: "0...1", describe: format) { (text: String) throws(ValueError) -> Double in
            guard let value = Double(text), value.isFinite, (0...1).contains(value) else {
                throw ValueError(expected: "a fraction from 0 to 1")
            }
            return value
        }
    }
}

extension ValueType where Value == Duration {
    /// A number of seconds (decimals allowed) in `range`, as a `Duration`.
    public static func seconds(in range: ClosedRange<Double>) -> ValueType<Duration> {
        let expected = "seconds from \(format(range.lowerBound)) to \(format(range.upperBound))"
        return ValueType(summary: "\(format(range.lowerBound))...\(format(range.upperBound)) s",
                         describe: { format(decimalSeconds($0)) }) { (text: String) throws(ValueError) -> Duration in
            guard let value = Double(text), value.isFinite, range.contains(value) else { throw ValueError(expected: expected) }
            return .seconds(value)
        }
    }
}

extension ValueType {
    /// A value of the caller's own shape: `convert` returns nil when `text` does not fit, and the
    /// error says `expected <expected>`.
    public static func custom(_ expected: String, summary: String? = nil,
                              describe: @escaping @Sendable (Value) -> String = { String(describing: $0) },
                              _ convert: @escaping @Sendable (String) -> Value?) -> ValueType<Value> {
        ValueType(summary: summary, describe: describe) { (text: String) throws(ValueError) -> Value in
            guard let value = convert(text) else { throw ValueError(expected: expected) }
            return value
        }
    }
}

/// `3600` for 3600.0, `0.05` for 0.05: numbers in help and messages as people write them.
func format(_ value: Double) -> String {
    if value == value.rounded(), abs(value) < 1e15 { return String(Int(value)) }
    return String(value)
}

/// A `Duration` as decimal seconds.
func decimalSeconds(_ duration: Duration) -> Double {
    let parts = duration.components
    return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
}
