/// A request's header fields in the order received. Names are matched case-insensitively (RFC 9110
/// §5.1); a repeated name answers its first value. Kept as a list, not a dictionary: a request has
/// a handful of fields, and scanning them is cheaper than hashing every name on every request.
public struct HTTPRequestHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [HTTPHeader]

    public init(_ fields: [HTTPHeader] = []) {
        self.fields = fields
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { HTTPHeader($0.0, $0.1) }
    }

    /// The first value of the field `name` (any case), or nil.
    public subscript(name: String) -> String? {
        fields.first { Self.sameName($0.name, name) }?.value
    }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[HTTPHeader]> { fields.makeIterator() }

    mutating func append(_ field: HTTPHeader) { fields.append(field) }

    /// ASCII case-insensitive equality (field names are tokens: ASCII only).
    static func sameName(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        return zip(a.utf8, b.utf8).allSatisfy { lowered($0) == lowered($1) }
    }

    private static func lowered(_ byte: UInt8) -> UInt8 {
        (65...90).contains(byte) ? byte | 0x20 : byte
    }
}
