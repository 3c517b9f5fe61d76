import Foundation
import MicroHTTP

/// Admin API for app transfers (not part of Apple's surface):
/// - `POST /__sandbox/users` `{"users":[{"team_id","client_id","sub","private_email":bool,
///   "state":"valid"|"revoked"|"invalid_grant","user_id"?}]}` → `{"registered":N}` (`invalid_grant`:
///   Apple refuses this user alone with `invalid_grant`, whatever the bearer);
/// - `POST /__sandbox/transfers` `{"client_id","from_team_id","to_team_id","transferred_at":S}`
///   (seconds since 1970; the window closes 60 days later) → `{"ok":true}`;
/// - `POST /__sandbox/clock` `{"advance_seconds":S}` or `{"offset_seconds":S}` → `{"offset_seconds":S}`;
/// - `GET /__sandbox/migration-truth?team_id=A&client_id=C&target=B` → `{"users":[...]}`
///   (`SandboxMigrationTruth` per user of A/C, sorted by sub).
extension AdminEndpoints {
    static let migrationPostPaths: Set<String> = ["/__sandbox/users", "/__sandbox/transfers", "/__sandbox/clock"]

    /// Handles the migration admin paths; nil for any other path.
    func handleMigration(_ req: HTTPServerRequest) throws -> HTTPServerResponse? {
        switch (req.method, req.path) {
        case ("POST", "/__sandbox/users"): return try registerUsers(req.body)
        case ("POST", "/__sandbox/transfers"): return try recordTransfer(req.body)
        case ("POST", "/__sandbox/clock"): return try clock(req.body)
        case ("GET", "/__sandbox/migration-truth"): return try migrationTruth(req)
        case (_, let path) where Self.migrationPostPaths.contains(path): return .methodNotAllowed("POST")
        case (_, "/__sandbox/migration-truth"): return .methodNotAllowed("GET")
        default: return nil
        }
    }

    private struct UsersIn: Decodable {
        struct User: Decodable {
            var team_id: String
            var client_id: String
            var sub: String
            var private_email: Bool?
            var state: String?
            var user_id: String?
        }
        var users: [User]
    }

    private func registerUsers(_ body: [UInt8]) throws -> HTTPServerResponse {
        let input = try AdminJSON.decode(UsersIn.self, body)
        var out: [SandboxMigrationUser] = []
        out.reserveCapacity(input.users.count)
        for (i, u) in input.users.enumerated() {
            for (name, value) in [("team_id", u.team_id), ("client_id", u.client_id), ("sub", u.sub)] where value.isEmpty {
                throw SandboxAdminError(field: "users[\(i)].\(name)", reason: "must not be empty")
            }
            let state = u.state ?? "valid"
            guard ["valid", "revoked", "invalid_grant"].contains(state) else {
                throw SandboxAdminError(field: "users[\(i)].state", reason: "expected \"valid\", \"revoked\" or \"invalid_grant\"")
            }
            out.append(SandboxMigrationUser(teamID: u.team_id, clientID: u.client_id, sub: u.sub,
                                            privateEmail: u.private_email ?? false, revoked: state == "revoked", appleUserID: u.user_id,
                                            grantRefused: state == "invalid_grant"))
        }
        model.registerMigrationUsers(out)
        return .adminJSON("{\"registered\":\(out.count)}")
    }

    private struct TransferIn: Decodable {
        var client_id: String
        var from_team_id: String
        var to_team_id: String
        var transferred_at: Double
    }

    private func recordTransfer(_ body: [UInt8]) throws -> HTTPServerResponse {
        let t = try AdminJSON.decode(TransferIn.self, body)
        for (name, value) in [("client_id", t.client_id), ("from_team_id", t.from_team_id), ("to_team_id", t.to_team_id)]
        where value.isEmpty {
            throw SandboxAdminError(field: name, reason: "must not be empty")
        }
        guard t.transferred_at.isFinite, t.transferred_at > 0 else {
            throw SandboxAdminError(field: "transferred_at", reason: "expected seconds since 1970")
        }
        model.recordAppTransfer(clientID: t.client_id, fromTeamID: t.from_team_id, toTeamID: t.to_team_id, at: t.transferred_at)
        return .adminJSON("{\"ok\":true}")
    }

    private struct ClockIn: Decodable {
        var advance_seconds: Double?
        var offset_seconds: Double?
    }

    private func clock(_ body: [UInt8]) throws -> HTTPServerResponse {
        let c = try AdminJSON.decode(ClockIn.self, body)
        if let offset = c.offset_seconds {
            guard offset.isFinite else { throw SandboxAdminError(field: "offset_seconds", reason: "expected seconds") }
            model.clockOffset = offset
        } else if let advance = c.advance_seconds {
            guard advance.isFinite, advance >= 0 else {
                throw SandboxAdminError(field: "advance_seconds", reason: "expected seconds >= 0")
            }
            model.clockOffset += advance
        } else {
            throw SandboxAdminError(field: "advance_seconds", reason: "required (or offset_seconds)")
        }
        return .adminJSON("{\"offset_seconds\":\(model.clockOffset)}")
    }

    private func migrationTruth(_ req: HTTPServerRequest) throws -> HTTPServerResponse {
        var values: [String] = []
        for name in ["team_id", "client_id", "target"] {
            guard let v = req.query[name], !v.isEmpty else { throw SandboxAdminError(field: name, reason: "query parameter required") }
            values.append(v)
        }
        let truth = model.migrationTruth(fromTeamID: values[0], clientID: values[1], toTeamID: values[2])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(["users": truth])
        return .adminJSON(bytes: Array(data))
    }
}
