import Foundation
import MicroHTTP
import SIWACore

extension AdminEndpoints {
    /// Key rotation and notification signing:
    /// - `POST /__sandbox/keys/rotate` → `{"kid":NEW,"published":[NEW, OLD, ...]}`: a new signing key;
    ///   old keys stay in `/auth/keys` until retired. Body `{"publish":false}` (optional): the new
    ///   key signs but is left out of `/auth/keys` until `POST /__sandbox/keys/publish`;
    /// - `POST /__sandbox/keys/publish` → `{"published":[...]}`;
    /// - `POST /__sandbox/keys/retire` → `{"removed":[...],"published":[CURRENT]}`;
    /// - `GET /__sandbox/keys` → `{"kid":CURRENT,"published":[...],"rotations":N}`;
    /// - `POST /__sandbox/notifications` with `{"events":[SPEC, ...]}` → `{"kid":K,"payloads":[JWT, ...]}`,
    ///   each SPEC `{"type","sub","client_id","email"?,"is_private_email"? (bool, string or number),
    ///   "encoding"? ("string" default, or "object"),"event_time_unit"? ("ms" default, or "s"),
    ///   "event_time"? (seconds),"jti"?,"iat"?,"exp"?,"iss"?}`.
    /// Returns nil for other paths.
    func handleKeysAndNotifications(_ req: HTTPServerRequest) throws -> HTTPServerResponse? {
        switch (req.method, req.path) {
        case ("POST", "/__sandbox/keys/rotate"):
            let bits = max(2048, (keys.modulusBytes) * 8)
            let publish = req.body.isEmpty ? true : (try AdminJSON.decode(RotateIn.self, req.body).publish ?? true)
            let next = try SandboxSigningKey.generate(bits: bits)
            keys.rotate(to: next, publish: publish)
            return .adminJSON("{\"kid\":\(JSONText.quote(next.keyID)),\"published\":\(Self.list(keys.publishedKIDs))}")
        case ("POST", "/__sandbox/keys/publish"):
            keys.publish()
            return .adminJSON("{\"published\":\(Self.list(keys.publishedKIDs))}")
        case ("POST", "/__sandbox/keys/retire"):
            let removed = keys.retire()
            return .adminJSON("{\"removed\":\(Self.list(removed)),\"published\":\(Self.list(keys.publishedKIDs))}")
        case ("GET", "/__sandbox/keys"):
            return .adminJSON("{\"kid\":\(JSONText.quote(keys.currentKID)),\"published\":\(Self.list(keys.publishedKIDs)),"
                + "\"rotations\":\(keys.rotations)}")
        case ("POST", "/__sandbox/notifications"):
            let specs = try Self.notificationSpecs(req.body)
            let now = model.now
            let payloads = try specs.map { try keys.sign(claimsJSON: $0.claimsJSON(now: now)) }
            return .adminJSON("{\"kid\":\(JSONText.quote(keys.currentKID)),\"payloads\":\(Self.list(payloads))}")
        case (_, "/__sandbox/keys/rotate"), (_, "/__sandbox/keys/retire"), (_, "/__sandbox/keys/publish"),
             (_, "/__sandbox/notifications"):
            return .methodNotAllowed("POST")
        case (_, "/__sandbox/keys"):
            return .methodNotAllowed("GET")
        default:
            return nil
        }
    }

    static func list(_ items: [String]) -> String {
        "[" + items.map(JSONText.quote).joined(separator: ",") + "]"
    }

    private struct RotateIn: Decodable { var publish: Bool? }

    private struct SpecIn: Decodable {
        enum Flag: Decodable {
            case bool(Bool), string(String), number(Double)
            init(from decoder: any Decoder) throws {
                let c = try decoder.singleValueContainer()
                if let b = try? c.decode(Bool.self) {
                    self = .bool(b)
                } else if let n = try? c.decode(Double.self) {
                    self = .number(n)
                } else {
                    self = .string(try c.decode(String.self))
                }
            }
        }
        var type: String
        var sub: String
        var client_id: String
        var email: String?
        var is_private_email: Flag?
        var encoding: String?
        var event_time_unit: String?
        var event_time: Double?
        var jti: String?
        var iat: Int?
        var exp: Int?
        var iss: String?
    }

    private struct SpecsIn: Decodable { var events: [SpecIn] }

    static func notificationSpecs(_ body: [UInt8]) throws -> [NotificationSpec] {
        let input = try AdminJSON.decode(SpecsIn.self, body)
        return try input.events.enumerated().map { i, e in
            var spec = NotificationSpec(type: e.type, sub: e.sub, clientID: e.client_id, email: e.email,
                                        eventTime: e.event_time, jti: e.jti, iat: e.iat, exp: e.exp, iss: e.iss)
            switch e.is_private_email {
            case .bool(let b)?: spec.isPrivateEmail = .bool(b)
            case .string(let s)?: spec.isPrivateEmail = .string(s)
            case .number(let n)?:
                guard n.isFinite else { throw SandboxAdminError(field: "events[\(i)].is_private_email", reason: "expected a finite number") }
                spec.isPrivateEmail = .json(n == n.rounded() && abs(n) < 1e15 ? String(Int64(n)) : String(n))
            case nil: break
            }
            if let enc = e.encoding {
                guard let v = NotificationSpec.Encoding(rawValue: enc) else {
                    throw SandboxAdminError(field: "events[\(i)].encoding", reason: "expected \"object\" or \"string\"")
                }
                spec.encoding = v
            }
            if let unit = e.event_time_unit {
                guard let v = NotificationSpec.TimeUnit(rawValue: unit) else {
                    throw SandboxAdminError(field: "events[\(i)].event_time_unit", reason: "expected \"s\" or \"ms\"")
                }
                spec.eventTimeUnit = v
            }
            return spec
        }
    }
}
