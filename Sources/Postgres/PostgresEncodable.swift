import Foundation

/// A Swift value that can be sent as a text-format bind parameter.
/// `postgresText` is PostgreSQL's text input form of the value; nil means SQL NULL.
public protocol PostgresEncodable: Sendable {
    var postgresText: String? { get }
}

extension String: PostgresEncodable {
    public var postgresText: String? { self }
}

extension Int: PostgresEncodable {
    public var postgresText: String? { String(self) }
}

extension Int64: PostgresEncodable {
    public var postgresText: String? { String(self) }
}

extension Int32: PostgresEncodable {
    public var postgresText: String? { String(self) }
}

extension Int16: PostgresEncodable {
    public var postgresText: String? { String(self) }
}

extension Double: PostgresEncodable {
    /// Shortest round-tripping decimal; `NaN`, `Infinity`, `-Infinity` for the special values.
    public var postgresText: String? {
        if isNaN { return "NaN" }
        if isInfinite { return self < 0 ? "-Infinity" : "Infinity" }
        return description
    }
}

extension Bool: PostgresEncodable {
    /// "t" or "f".
    public var postgresText: String? { self ? "t" : "f" }
}

extension Date: PostgresEncodable {
    /// ISO 8601 in UTC with microseconds, e.g. `2026-11-30T03:04:05.123456Z` (timestamptz input).
    public var postgresText: String? { PostgresTimestamp.format(self) }
}

extension UUID: PostgresEncodable {
    /// Canonical lower-case form, e.g. `6f1c0b7e-...`.
    public var postgresText: String? { uuidString.lowercased() }
}

extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    /// nil binds SQL NULL.
    public var postgresText: String? {
        switch self {
        case .some(let wrapped): wrapped.postgresText
        case .none: nil
        }
    }
}
