import AppleID
import Foundation

extension SandboxAdminClient {
    /// Asks the sandbox to sign notifications (`POST /__sandbox/notifications`). Each event is a
    /// spec object as documented there (`type`, `sub`, `client_id`, `encoding`, `event_time_unit`, ...).
    /// - Returns: the compact JWTs, in order.
    public func signNotifications(_ events: [[String: any Sendable]]) async throws -> [String] {
        let object = try await post("/__sandbox/notifications", ["events": events])
        guard let payloads = object["payloads"] as? [String], payloads.count == events.count else {
            throw SandboxAdminClientError(message: "sandbox answered /__sandbox/notifications without one payload per event")
        }
        return payloads
    }

    /// Rotates the sandbox's signing key (`POST /__sandbox/keys/rotate`); returns the new `kid`.
    @discardableResult
    public func rotateKeys() async throws -> String {
        let object = try await post("/__sandbox/keys/rotate", [:])
        guard let kid = object["kid"] as? String else {
            throw SandboxAdminClientError(message: "sandbox answered /__sandbox/keys/rotate without a kid")
        }
        return kid
    }

    /// Stops publishing old keys (`POST /__sandbox/keys/retire`); returns the removed kids.
    @discardableResult
    public func retireKeys() async throws -> [String] {
        (try await post("/__sandbox/keys/retire", [:])["removed"] as? [String]) ?? []
    }
}

/// The four event types in every shape real traffic and Apple's documentation use, cycled by
/// index: 4 types x `events` as object or string x `event_time` in s or ms x
/// `is_private_email` as bool or string (email events only).
public enum NotificationMix {
    public static let types = ["email-disabled", "email-enabled", "consent-revoked", "account-delete"]

    /// The sandbox spec of notification `index` about `sub`.
    public static func spec(index: Int, sub: String, clientID: String) -> [String: any Sendable] {
        let type = types[index % 4]
        var spec: [String: any Sendable] = [
            "type": type, "sub": sub, "client_id": clientID,
            "encoding": (index / 4) % 2 == 0 ? "string" : "object",
            "event_time_unit": (index / 8) % 2 == 0 ? "ms" : "s",
        ]
        if type.hasPrefix("email-") {
            spec["email"] = "relay-\(index)@privaterelay.appleid.com"
            if (index / 16) % 2 == 0 { spec["is_private_email"] = "true" } else { spec["is_private_email"] = true }
        }
        return spec
    }
}
