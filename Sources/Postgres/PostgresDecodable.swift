import Foundation

/// A Swift type that can be read from a column's text-format value (PostgreSQL's output form).
/// Errors are `.decoding` and never quote the value; ``PostgresRow`` adds the column name.
public protocol PostgresDecodable: Sendable {
    init(postgresText: String) throws(DatabaseError)
}

extension String: PostgresDecodable {
    public init(postgresText: String) throws(DatabaseError) { self = postgresText }
}

extension Int: PostgresDecodable {
    public init(postgresText: String) throws(DatabaseError) {
        guard let value = Int(postgresText) else { throw .decoding("not an integer that fits Int") }
        self = value
    }
}

extension Int64: PostgresDecodable {
    public init(postgresText: String) throws(DatabaseError) {
        guard let value = Int64(postgresText) else { throw .decoding("not an integer that fits Int64") }
        self = value
    }
}

extension Int32: PostgresDecodable {
    public init(postgresText: String) throws(DatabaseError) {
        guard let value = Int32(postgresText) else { throw .decoding("not an integer that fits Int32") }
        self = value
    }
}

extension Int16: PostgresDecodable {
    public init(postgresText: String) throws(DatabaseError) {
        guard let value = Int16(postgresText) else { throw .decoding("not an integer that fits Int16") }
        self = value
    }
}

extension Double: PostgresDecodable {
    /// Accepts float4/float8/numeric output, including `NaN`, `Infinity`, `-Infinity`.
    public init(postgresText: String) throws(DatabaseError) {
        guard let value = Double(postgresText) else { throw .decoding("not a floating-point number") }
        self = value
    }
}

extension Bool: PostgresDecodable {
    /// `t`/`f` (boolean output), also `true`/`false`.
    public init(postgresText: String) throws(DatabaseError) {
        switch postgresText {
        case "t", "true": self = true
        case "f", "false": self = false
        default: throw .decoding("not a boolean (expected t or f)")
        }
    }
}

extension Date: PostgresDecodable {
    /// `timestamptz`, `timestamp` (taken as UTC) or `date` text in DateStyle ISO, with or without
    /// fractional seconds and with offsets like `+00`, `+05:30`, `-03:30:15`; `infinity` maps
    /// to `distantFuture`, `-infinity` to `distantPast`.
    public init(postgresText: String) throws(DatabaseError) {
        self = try PostgresTimestamp.parse(postgresText)
    }
}

extension UUID: PostgresDecodable {
    public init(postgresText: String) throws(DatabaseError) {
        guard let value = UUID(uuidString: postgresText) else { throw .decoding("not a UUID") }
        self = value
    }
}

/// An element type whose Swift arrays can be read from one column: a one-dimensional array
/// (`{a,"b c",NULL}`), except `[UInt8]`, which reads `bytea` in hex format.
public protocol PostgresArrayElementDecodable: Sendable {
    static func decodeArray(postgresText: String) throws(DatabaseError) -> [Self]
}

extension PostgresArrayElementDecodable where Self: PostgresDecodable {
    /// A NULL element is an error; decode as `[T?]` to accept them.
    public static func decodeArray(postgresText: String) throws(DatabaseError) -> [Self] {
        var result: [Self] = []
        for element in try PostgresArrayLiteral.decode(postgresText) {
            guard let element else { throw .decoding("array contains NULL (decode as an array of optionals)") }
            result.append(try Self(postgresText: element))
        }
        return result
    }
}

extension Optional: PostgresArrayElementDecodable where Wrapped: PostgresDecodable {
    public static func decodeArray(postgresText: String) throws(DatabaseError) -> [Wrapped?] {
        var result: [Wrapped?] = []
        for element in try PostgresArrayLiteral.decode(postgresText) {
            if let element { result.append(try Wrapped(postgresText: element)) } else { result.append(nil) }
        }
        return result
    }
}

extension Array: PostgresDecodable where Element: PostgresArrayElementDecodable {
    public init(postgresText: String) throws(DatabaseError) {
        self = try Element.decodeArray(postgresText: postgresText)
    }
}

extension String: PostgresArrayElementDecodable {}
extension Int: PostgresArrayElementDecodable {}
extension Int64: PostgresArrayElementDecodable {}
extension Int32: PostgresArrayElementDecodable {}
extension Int16: PostgresArrayElementDecodable {}
extension Double: PostgresArrayElementDecodable {}
extension Bool: PostgresArrayElementDecodable {}
extension Date: PostgresArrayElementDecodable {}
extension UUID: PostgresArrayElementDecodable {}

extension UInt8: PostgresArrayElementDecodable {
    /// `bytea` in hex format (`\x0102ff`, PostgreSQL's default `bytea_output`).
    public static func decodeArray(postgresText: String) throws(DatabaseError) -> [UInt8] {
        try PostgresBytea.decode(postgresText)
    }
}
