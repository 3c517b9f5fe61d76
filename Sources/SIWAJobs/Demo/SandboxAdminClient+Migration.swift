import Foundation

/// The sandbox's app-transfer admin API (`/__sandbox/users`, `/transfers`, `/clock`, `/faults`).
extension SandboxAdminClient {
    /// One sending-team user for the sandbox: team-scoped `sub`, whether the user chose Hide My
    /// Email for the app, and whether the user revoked access (`invalid_request` on exchange).
    public struct MigrationUser: Sendable {
        public let sub: String
        public let privateEmail: Bool
        public let revoked: Bool
        public init(sub: String, privateEmail: Bool, revoked: Bool) {
            self.sub = sub
            self.privateEmail = privateEmail
            self.revoked = revoked
        }
    }

    /// Registers users of `teamID`/`clientID` in batches of `batchSize`.
    public func registerMigrationUsers(_ users: [MigrationUser], teamID: String, clientID: String,
                                       batchSize: Int = 10_000) async throws {
        var start = 0
        while start < users.count {
            let entries: [[String: Any]] = users[start..<min(start + batchSize, users.count)].map {
                ["team_id": teamID, "client_id": clientID, "sub": $0.sub, "private_email": $0.privateEmail,
                 "state": $0.revoked ? "revoked" : "valid"]
            }
            _ = try await post("/__sandbox/users", ["users": entries])
            start += batchSize
        }
    }

    /// Records that `clientID` moved from `fromTeamID` to `toTeamID` at `at`; the migration
    /// window closes 60 days later.
    public func recordTransfer(clientID: String, fromTeamID: String, toTeamID: String, at: Date) async throws {
        _ = try await post("/__sandbox/transfers", ["client_id": clientID, "from_team_id": fromTeamID,
                                                     "to_team_id": toTeamID, "transferred_at": at.timeIntervalSince1970])
    }

    /// Moves the sandbox clock for bearer tokens and the window forward by `seconds`.
    public func advanceClock(seconds: Double) async throws {
        _ = try await post("/__sandbox/clock", ["advance_seconds": seconds])
    }

    /// Drops every queued scripted fault.
    public func clearFaults() async throws {
        _ = try await post("/__sandbox/faults", ["clear": true])
    }
}
