/// A SQL statement whose values travel separately from its text, as `$n` bind parameters.
///
///     let sql: SQL = "SELECT * FROM siwa.jobs WHERE id = \(jobID) AND state = ANY(\(states))"
///     // text: "SELECT * FROM siwa.jobs WHERE id = $1 AND state = ANY($2)", binds: ["42", "{queued,running}"]
///
/// Interpolations:
/// - `\(value)` for any ``PostgresEncodable`` (Optional `nil` binds SQL NULL) becomes the next `$n`;
/// - `\(unsafeSQL: "fragment")` pastes trusted SQL text verbatim (never user input);
/// - `\(identifier: "name")` pastes a double-quoted identifier;
/// - `\(other)` splices another `SQL`, renumbering its placeholders after ours.
///
/// Only placeholders created by interpolation are renumbered; a literal `$1` written inside
/// `unsafeSQL` text is left alone. Values are sent in text format (`PQexecParams`).
public struct SQL: Sendable, ExpressibleByStringInterpolation {
    public private(set) var text: String
    /// Text-format values for `$1...$n`; nil is SQL NULL.
    public private(set) var binds: [String?]
    /// UTF-8 offset in `text` of each placeholder, in bind order. Invariant: the placeholder of
    /// bind `i` (0-based) is spelled `$<i+1>`.
    private var placeholderOffsets: [Int]
    /// Run as a named prepared statement on connections that allow it, so the server parses and
    /// plans this text once per connection instead of on every call (see `reusingPlan()`).
    public private(set) var reusesPlan = false

    /// Trusted SQL text with no bind values. Never build this from user input.
    public init(unsafeSQL: String) {
        text = unsafeSQL
        binds = []
        placeholderOffsets = []
    }

    /// This statement, marked to run as a prepared statement where the connection allows it:
    /// directly to PostgreSQL, not through a pooler in transaction mode, where a statement
    /// prepared on one server connection is missing on the next (PgBouncer before 1.21). Mark
    /// statements that run often with the same text and different values (the queue's claim and
    /// completion); PostgreSQL then plans them once generically after five custom plans
    /// (`plan_cache_mode = auto`).
    public func reusingPlan() -> SQL {
        var copy = self
        copy.reusesPlan = true
        return copy
    }

    public init(stringLiteral value: String) {
        self.init(unsafeSQL: value)
    }

    public init(stringInterpolation: StringInterpolation) {
        self = stringInterpolation.sql
    }

    /// Appends `value` as the next bind parameter and writes its `$n` placeholder.
    public mutating func appendBind(_ value: (some PostgresEncodable)?) {
        appendRawBind(value?.postgresText ?? nil)
    }

    /// Appends trusted SQL text verbatim.
    public mutating func append(unsafeSQL fragment: String) {
        text += fragment
    }

    /// Appends `other`, renumbering its placeholders to follow ours.
    public mutating func append(_ other: SQL) {
        guard !other.binds.isEmpty else {
            text += other.text
            return
        }
        let source = Array(other.text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(source.count + other.binds.count * 2)
        let base = text.utf8.count
        var cursor = 0
        for (index, offset) in other.placeholderOffsets.enumerated() {
            output.append(contentsOf: source[cursor..<offset])
            placeholderOffsets.append(base + output.count)
            output.append(contentsOf: "$\(binds.count + index + 1)".utf8)
            cursor = offset + 1 + Self.decimalDigits(index + 1)
        }
        output.append(contentsOf: source[cursor...])
        text += String(decoding: output, as: UTF8.self)
        binds.append(contentsOf: other.binds)
    }

    /// `lhs` followed by `rhs`, with `rhs`'s placeholders renumbered.
    public static func + (lhs: SQL, rhs: SQL) -> SQL {
        var result = lhs
        result.append(rhs)
        return result
    }

    public static func += (lhs: inout SQL, rhs: SQL) {
        lhs.append(rhs)
    }

    /// `name` as a double-quoted SQL identifier, with embedded quotes doubled.
    public static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacing("\"", with: "\"\"") + "\""
    }

    private mutating func appendRawBind(_ value: String?) {
        placeholderOffsets.append(text.utf8.count)
        binds.append(value)
        text += "$\(binds.count)"
    }

    private static func decimalDigits(_ value: Int) -> Int {
        var digits = 1
        var rest = value / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        return digits
    }

    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        fileprivate var sql: SQL

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql = SQL(unsafeSQL: "")
            sql.text.reserveCapacity(literalCapacity + interpolationCount * 3)
            sql.binds.reserveCapacity(interpolationCount)
            sql.placeholderOffsets.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            sql.text += literal
        }

        /// A bind parameter (`$n`).
        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            sql.appendRawBind(value.postgresText)
        }

        /// A bind parameter (`$n`); nil binds SQL NULL. (An explicit Optional overload, so the
        /// compiler does not warn about interpolating optionals.)
        public mutating func appendInterpolation<T: PostgresEncodable>(_ value: T?) {
            sql.appendRawBind(value?.postgresText ?? nil)
        }

        /// Trusted SQL text, verbatim.
        public mutating func appendInterpolation(unsafeSQL fragment: String) {
            sql.text += fragment
        }

        /// A double-quoted identifier (schema, table, column or channel name).
        public mutating func appendInterpolation(identifier name: String) {
            sql.text += SQL.quoteIdentifier(name)
        }

        /// Another SQL value, its placeholders renumbered.
        public mutating func appendInterpolation(_ other: SQL) {
            sql.append(other)
        }
    }
}
