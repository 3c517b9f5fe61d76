import Foundation

/// A parsed JSON value (RFC 8259) for claims whose shape varies in real Apple traffic
/// (bool or string, number or string, object or JSON-encoded string). Numbers are kept as
/// `Double`, which is exact for every integer Apple sends (seconds and milliseconds since 1970).
enum JSONValue: Sendable, Equatable, Decodable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Parses `bytes` as one JSON object. Returns nil for anything else (invalid UTF-8 or JSON,
    /// nesting deeper than the decoder allows, or a top-level value that is not an object).
    static func object(from bytes: [UInt8]) -> [String: JSONValue]? {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)),
              case .object(let members) = value else { return nil }
        return members
    }

    /// A short name of the JSON type, for error details ("a string", "a number", ...).
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
