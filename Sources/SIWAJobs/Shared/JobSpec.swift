import Foundation

/// Reads fields of a job spec (JSON object text). Errors name the field.
struct JobSpec: Sendable {
    let fields: [String: String]

    init(json: String) throws {
        guard let data = json.data(using: .utf8),
              let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw JobSpecError(field: "spec", message: "is not a JSON object")
        }
        var fields: [String: String] = [:]
        for (key, value) in object {
            switch value {
            case let s as String: fields[key] = s
            case let n as NSNumber: fields[key] = n.stringValue
            default: continue
            }
        }
        self.fields = fields
    }

    func require(_ field: String) throws -> String {
        guard let value = fields[field], !value.isEmpty else {
            throw JobSpecError(field: field, message: "is missing from the job spec")
        }
        return value
    }
}

struct JobSpecError: Error, CustomStringConvertible {
    let field: String
    let message: String
    var description: String { "job spec field '\(field)' \(message)" }
}

/// JSON object text from string fields, for result details, audit details and effects.
func jsonObject(_ fields: [String: String?]) -> String {
    var object: [String: String] = [:]
    for (k, v) in fields { if let v { object[k] = v } }
    guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "{}" }
    return String(decoding: data, as: UTF8.self)
}
