/// One result row, values in PostgreSQL's text format.
///
///     let id: Int64 = try row.decode("id")
///     let email: String? = try row.decode("email", as: String?.self)   // NULL -> nil
///     let note = try row.decode("note", as: String?.self)
///
/// Decoding as `T` throws a `.decoding` error naming the column when the value is NULL;
/// decoding as `T?` (pass `as: T?.self` or assign to an optional) returns nil for NULL.
/// Error messages name the column but never contain the value.
public struct PostgresRow: Sendable {
    /// Column names in result order.
    public let columns: [String]
    @usableFromInline let values: [String?]
    @usableFromInline let lookup: ColumnLookup

    init(columns: [String], values: [String?], lookup: ColumnLookup) {
        self.columns = columns
        self.values = values
        self.lookup = lookup
    }

    /// Raw text of `column`; nil for NULL or an unknown column.
    public subscript(column: String) -> String? {
        guard let index = lookup.index(of: column) else { return nil }
        return values[index]
    }

    /// True when `column` is NULL (or does not exist).
    public func isNull(_ column: String) -> Bool {
        self[column] == nil
    }

    /// The value of `column` as `T`. Throws `.decoding` naming the column if it is NULL, missing,
    /// or not convertible.
    /// Inlinable, so a caller in another module gets it specialized for its `T` (rows of every
    /// claim and completion are decoded through here).
    @inlinable
    public func decode<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws(DatabaseError) -> T {
        guard let text = try rawValue(column) else { throw Self.nullValue(column, T.self) }
        return try convert(text, column: column)
    }

    /// The value of `column` as `T?`: nil for NULL. Throws `.decoding` naming the column if the
    /// column is missing or not convertible.
    @inlinable
    public func decode<T: PostgresDecodable>(_ column: String, as type: T?.Type = T?.self) throws(DatabaseError) -> T? {
        guard let text = try rawValue(column) else { return nil }
        return try convert(text, column: column)
    }

    @inlinable
    func rawValue(_ column: String) throws(DatabaseError) -> String? {
        guard let index = lookup.index(of: column) else { throw Self.missingColumn(column) }
        return values[index]
    }

    @inlinable
    func convert<T: PostgresDecodable>(_ text: String, column: String) throws(DatabaseError) -> T {
        do {
            return try T(postgresText: text)
        } catch {
            throw Self.unconvertible(column, T.self, error)
        }
    }

    @usableFromInline
    static func nullValue(_ column: String, _ type: Any.Type) -> DatabaseError {
        .decoding("column \"\(column)\" is NULL; decode it as \(type)? to accept NULL")
    }

    @usableFromInline
    static func missingColumn(_ column: String) -> DatabaseError {
        .decoding("no column named \"\(column)\" in the result")
    }

    @usableFromInline
    static func unconvertible(_ column: String, _ type: Any.Type, _ error: DatabaseError) -> DatabaseError {
        .decoding("column \"\(column)\" as \(type): \(error.message)")
    }
}

/// Column name to position for one result, shared by all of its rows. The first of duplicate
/// names wins. A result of at most `linearLimit` columns (every statement of the queue) is
/// searched in order, which costs less than hashing the name on every `decode`.
@usableFromInline
final class ColumnLookup: Sendable {
    static let linearLimit = 16
    private let columns: [String]
    private let positions: [String: Int]

    init(columns: [String]) {
        self.columns = columns
        var positions: [String: Int] = [:]
        if columns.count > Self.linearLimit {
            for (index, name) in columns.enumerated() where positions[name] == nil {
                positions[name] = index
            }
        }
        self.positions = positions
    }

    @usableFromInline
    func index(of column: String) -> Int? {
        columns.count > Self.linearLimit ? positions[column] : columns.firstIndex(of: column)
    }
}
