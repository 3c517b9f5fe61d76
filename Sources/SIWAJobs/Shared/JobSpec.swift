import Foundation
import SIWACore

/// A job kind's spec: the JSON object stored in `siwa.jobs.spec`, encoded when the job is
/// enqueued and decoded by the kind's handler. Keys are snake_case and every value is a JSON
/// string, as the first releases wrote them, so rows written by either side read on the other.
protocol JobSpec: Codable, Sendable {}

extension JobSpec {
    /// Decodes a job's `spec` text.
    /// - Throws: `JobSpecError` naming the field that is missing, empty or not a string, or field
    ///   `spec` when the text is not a JSON object.
    static func decode(_ json: String) throws(JobSpecError) -> Self {
        do {
            return try JSONDecoder().decode(Self.self, from: Data(json.utf8))
        } catch let error as JobSpecError {
            throw error
        } catch let DecodingError.keyNotFound(key, _) {
            throw JobSpecError(field: key.stringValue, message: "is missing from the job spec")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            guard let field = context.codingPath.last?.stringValue else {
                throw JobSpecError(field: "spec", message: "is not a JSON object")
            }
            throw JobSpecError(field: field, message: "is not a string")
        } catch {
            throw JobSpecError(field: "spec", message: "is not a JSON object")
        }
    }

    /// The JSON object text stored in `siwa.jobs.spec` (keys sorted).
    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

struct JobSpecError: Error, CustomStringConvertible {
    let field: String
    let message: String
    var description: String { "job spec field '\(field)' \(message)" }
}

/// The spec of kinds without parameters (`noop`, `notification-processing`): `{}`.
struct EmptyJobSpec: JobSpec {}

/// The team and client of a job over accounts (`refresh-validation`, `revocation-sweep`):
/// `{"client_id": ..., "team_id": ...}`.
struct ClientJobSpec: JobSpec {
    let teamID: String
    let clientID: String

    init(teamID: String, clientID: String) {
        self.teamID = teamID
        self.clientID = clientID
    }

    enum CodingKeys: String, CodingKey {
        case teamID = "team_id", clientID = "client_id"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        teamID = try c.nonEmptyString(.teamID)
        clientID = try c.nonEmptyString(.clientID)
    }
}

extension KeyedDecodingContainer {
    /// A required string that is not empty (an empty value counts as missing).
    func nonEmptyString(_ key: Key) throws -> String {
        let value = try decode(String.self, forKey: key)
        guard !value.isEmpty else { throw JobSpecError(field: key.stringValue, message: "is missing from the job spec") }
        return value
    }
}

/// JSON object text from string fields, for result details and audit details: keys sorted, nil
/// values left out (`JSONText.object(pairs:)`).
func jsonObject(_ fields: KeyValuePairs<String, String?>) -> String {
    JSONText.object(pairs: fields)
}
