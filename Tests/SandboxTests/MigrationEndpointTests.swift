import Foundation
import SIWACrypto
import Testing
import TestSupport
@testable import Sandbox

/// `/auth/usermigrationinfo` over real HTTP: two teams with their own keys, an app transfer, and
/// every documented failure with the code the sandbox chose.
@Suite struct MigrationEndpointTests {
    static let teamB = "TEAMB67890"
    static let keyB = "KEYB654321"
    static let teamC = "TEAMC11111"
    static let keyC = "KEYC111111"
    let f: SandboxFixture
    let keyB: P256PrivateKey
    let keyC: P256PrivateKey

    init() throws {
        f = try SandboxFixture()
        keyB = try P256PrivateKey.generate()
        keyC = try P256PrivateKey.generate()
        try f.model.registerTeam(teamID: Self.teamB, keyID: Self.keyB, publicKeyPEM: keyB.publicKey.spkiPEM,
                                 clientIDs: [SandboxFixture.clientID])
        try f.model.registerTeam(teamID: Self.teamC, keyID: Self.keyC, publicKeyPEM: keyC.publicKey.spkiPEM,
                                 clientIDs: [SandboxFixture.clientID])
        f.model.registerMigrationUsers([
            SandboxMigrationUser(teamID: SandboxFixture.teamID, clientID: SandboxFixture.clientID, sub: "001.aaa.0001", privateEmail: true),
            SandboxMigrationUser(teamID: SandboxFixture.teamID, clientID: SandboxFixture.clientID, sub: "001.bbb.0002", privateEmail: false),
            SandboxMigrationUser(teamID: SandboxFixture.teamID, clientID: SandboxFixture.clientID, sub: "001.ccc.0003", privateEmail: true,
                                 revoked: true),
        ])
        f.model.recordAppTransfer(clientID: SandboxFixture.clientID, fromTeamID: SandboxFixture.teamID, toTeamID: Self.teamB,
                                  at: f.now - 86_400)
    }

    func secret(team: String, client: String = SandboxFixture.clientID) throws -> String {
        switch team {
        case Self.teamB: try f.secret(iss: Self.teamB, kid: Self.keyB, sub: client, signingKey: keyB)
        case Self.teamC: try f.secret(iss: Self.teamC, kid: Self.keyC, sub: client, signingKey: keyC)
        default: try f.secret(sub: client)
        }
    }

    func bearer(team: String = SandboxFixture.teamID, client: String = SandboxFixture.clientID) throws -> String {
        let reply = try f.post("/auth/token", [("client_id", client), ("client_secret", try secret(team: team, client: client)),
                                               ("grant_type", "client_credentials"), ("scope", "user.migration")])
        #expect(reply.status == 200)
        return try #require(f.json(reply)?["access_token"] as? String)
    }

    func migrate(_ fields: [(String, String)], team: String = SandboxFixture.teamID, bearer: String?) throws -> HTTPReply {
        var headers = [("Content-Type", "application/x-www-form-urlencoded")]
        if let bearer { headers.append(("Authorization", "Bearer " + bearer)) }
        let all = fields + [("client_id", SandboxFixture.clientID), ("client_secret", try secret(team: team))]
        return try RawHTTP.request(port: f.port, method: "POST", path: "/auth/usermigrationinfo", headers: headers, body: RawHTTP.form(all))
    }

    func export(_ sub: String, target: String = teamB, bearer: String) throws -> HTTPReply {
        try migrate([("sub", sub), ("target", target)], bearer: bearer)
    }

    func error(_ reply: HTTPReply) -> String? { f.json(reply)?["error"] as? String }

    @Test func exportThenImportGivesTheDeterministicRecipientIdentity() throws {
        let a = try bearer()
        let first = try export("001.aaa.0001", bearer: a)
        #expect(first.status == 200)
        let transferSub = try #require(f.json(first)?["transfer_sub"] as? String)
        // Deterministic per (user, recipient team); a different recipient gets a different one.
        #expect(try f.json(export("001.aaa.0001", bearer: a))?["transfer_sub"] as? String == transferSub)
        #expect(try f.json(export("001.aaa.0001", target: Self.teamC, bearer: a))?["transfer_sub"] as? String != transferSub)

        let b = try bearer(team: Self.teamB)
        let reply = try migrate([("transfer_sub", transferSub)], team: Self.teamB, bearer: b)
        #expect(reply.status == 200)
        let body = try #require(f.json(reply))
        let truth = f.model.migrationTruth(fromTeamID: SandboxFixture.teamID, clientID: SandboxFixture.clientID, toTeamID: Self.teamB)
        let expected = try #require(truth.first { $0.sub == "001.aaa.0001" })
        #expect(expected.transferSub == transferSub)
        #expect(body["sub"] as? String == expected.newSub && expected.newSub != "001.aaa.0001")
        #expect(body["email"] as? String == expected.newEmail)
        #expect(expected.newEmail?.hasSuffix("@privaterelay.appleid.com") == true)
        let flag = body["is_private_email"]
        #expect((flag as? Bool) == true || (flag as? String) == "true")
        // Relay addresses are team-specific.
        let forC = f.model.migrationTruth(fromTeamID: SandboxFixture.teamID, clientID: SandboxFixture.clientID, toTeamID: Self.teamC)
        #expect(forC.first { $0.sub == "001.aaa.0001" }?.newEmail != expected.newEmail)
        #expect(f.model.stats().transferSubsIssued == 3 && f.model.stats().transferSubsExchanged == 1)
    }

    @Test func realEmailUsersGetNoEmailBack() throws {
        let transferSub = try #require(f.json(export("001.bbb.0002", bearer: bearer()))?["transfer_sub"] as? String)
        let body = try #require(f.json(migrate([("transfer_sub", transferSub)], team: Self.teamB, bearer: bearer(team: Self.teamB))))
        #expect(body["email"] == nil && body["sub"] is String)
        #expect((body["is_private_email"] as? Bool) == false || (body["is_private_email"] as? String) == "false")
    }

    /// Issue 8 §10: a user Apple refuses with `invalid_grant` alone, whatever the bearer, while the
    /// same bearer serves everyone else (export and import).
    @Test func aGrantRefusedUserIsInvalidGrantAloneOnBothSides() throws {
        let a = try bearer()
        let transferSub = try #require(f.json(export("001.aaa.0001", bearer: a))?["transfer_sub"] as? String)
        let registered = try f.postJSON("/__sandbox/users", """
            {"users":[{"team_id":"\(SandboxFixture.teamID)","client_id":"\(SandboxFixture.clientID)","sub":"001.aaa.0001",
                       "private_email":true,"state":"invalid_grant"}]}
            """)
        #expect(registered.status == 200, "\(registered.text)")
        let refused = try export("001.aaa.0001", bearer: a)
        #expect(refused.status == 400 && error(refused) == "invalid_grant" && refused.header("X-Sandbox-Reason") == "user_grant_refused")
        #expect(try export("001.bbb.0002", bearer: a).status == 200, "the same bearer works for another user")
        let late = try migrate([("transfer_sub", transferSub)], team: Self.teamB, bearer: bearer(team: Self.teamB))
        #expect(error(late) == "invalid_grant" && late.header("X-Sandbox-Reason") == "user_grant_refused")
        #expect(f.model.setMigrationUserGrantRefused(teamID: SandboxFixture.teamID, clientID: SandboxFixture.clientID,
                                                     sub: "001.aaa.0001", refused: false))
        #expect(try export("001.aaa.0001", bearer: a).status == 200)
        let bad = try f.postJSON("/__sandbox/users", #"{"users":[{"team_id":"T","client_id":"c","sub":"s","state":"gone"}]}"#)
        #expect(bad.status == 400 && bad.text.contains("invalid_grant"), "\(bad.text)")
    }

    @Test func perUserFailuresAreInvalidRequest() throws {
        let a = try bearer()
        let revoked = try export("001.ccc.0003", bearer: a)
        #expect(revoked.status == 400 && error(revoked) == "invalid_request" && revoked.header("X-Sandbox-Reason") == "user_revoked")
        let unknown = try export("999.zzz.9999", bearer: a)
        #expect(error(unknown) == "invalid_request" && unknown.header("X-Sandbox-Reason") == "unknown_user")
        let bogus = try migrate([("transfer_sub", "123456.00000000000000000000000000000000.0000")], team: Self.teamB,
                                bearer: bearer(team: Self.teamB))
        #expect(error(bogus) == "invalid_request" && bogus.header("X-Sandbox-Reason") == "unknown_transfer_sub")
        // A user who revokes between export and import is refused on import too.
        let transferSub = try #require(f.json(export("001.aaa.0001", bearer: a))?["transfer_sub"] as? String)
        f.model.setMigrationUserRevoked(teamID: SandboxFixture.teamID, clientID: SandboxFixture.clientID, sub: "001.aaa.0001", revoked: true)
        let late = try migrate([("transfer_sub", transferSub)], team: Self.teamB, bearer: bearer(team: Self.teamB))
        #expect(error(late) == "invalid_request" && late.header("X-Sandbox-Reason") == "user_revoked")
    }

    @Test func aTransferSubMintedForAnotherTeamIsInvalidRequest() throws {
        let transferSub = try #require(f.json(export("001.aaa.0001", bearer: bearer()))?["transfer_sub"] as? String)
        let reply = try migrate([("transfer_sub", transferSub)], team: Self.teamC, bearer: bearer(team: Self.teamC))
        #expect(reply.status == 400 && error(reply) == "invalid_request")
        #expect(reply.header("X-Sandbox-Reason") == "transfer_sub_other_team")
    }

    @Test func bearerMustMatchTeamAndClientAndExpiresAfterAnHour() throws {
        let b = try bearer(team: Self.teamB)
        let mismatched = try export("001.aaa.0001", bearer: b)   // team A's secret, team B's bearer
        #expect(error(mismatched) == "invalid_request" && mismatched.header("X-Sandbox-Reason") == "bearer_client_mismatch")
        let otherClient = try bearer(client: SandboxFixture.otherClientID)
        #expect(error(try export("001.aaa.0001", bearer: otherClient)) == "invalid_request")
        let missing = try export("001.aaa.0001", bearer: "")
        #expect(error(missing) == "invalid_request")
        let unknown = try export("001.aaa.0001", bearer: "a0000.0.sbx.0000")
        #expect(error(unknown) == "invalid_grant")

        let a = try bearer()
        #expect(try export("001.aaa.0001", bearer: a).status == 200)
        f.model.clockOffset = 3_599
        #expect(try export("001.aaa.0001", bearer: a).status == 200, "still valid just before one hour")
        f.model.clockOffset = 3_601
        let expired = try export("001.aaa.0001", bearer: a)
        #expect(expired.status == 400 && error(expired) == "invalid_grant" && expired.header("X-Sandbox-Reason") == "bearer_invalid")
        #expect(f.model.stats().bearerTokensMinted == 3)
    }

    @Test func afterSixtyDaysBothSidesGetInvalidGrant() throws {
        let a = try bearer()
        let transferSub = try #require(f.json(export("001.aaa.0001", bearer: a))?["transfer_sub"] as? String)
        f.model.clockOffset = 60 * 86_400   // transfer was a day ago: now day 61
        let a2 = try bearer()
        let exported = try export("001.aaa.0001", bearer: a2)
        #expect(error(exported) == "invalid_grant" && exported.header("X-Sandbox-Reason") == "migration_window_closed")
        let imported = try migrate([("transfer_sub", transferSub)], team: Self.teamB, bearer: bearer(team: Self.teamB))
        #expect(error(imported) == "invalid_grant" && imported.header("X-Sandbox-Reason") == "migration_window_closed")
    }

    /// The same window, moved by the sandbox clock itself rather than the admin offset.
    @Test func theWindowClosesWhenTheSandboxClockPassesSixtyDays() throws {
        let transferSub = try #require(f.json(export("001.aaa.0001", bearer: bearer()))?["transfer_sub"] as? String)
        f.clock.advance(by: .seconds(59 * 86_400 - 1))   // one second before the window closes
        #expect(try export("001.aaa.0001", bearer: bearer()).status == 200)
        f.clock.advance(by: .seconds(2))
        let exported = try export("001.aaa.0001", bearer: bearer())
        #expect(error(exported) == "invalid_grant" && exported.header("X-Sandbox-Reason") == "migration_window_closed")
        let imported = try migrate([("transfer_sub", transferSub)], team: Self.teamB, bearer: bearer(team: Self.teamB))
        #expect(error(imported) == "invalid_grant")
    }

    @Test func importBeforeTheAppIsTransferredIsRefused() throws {
        let transferSub = try #require(f.json(export("001.aaa.0001", target: Self.teamC, bearer: bearer()))?["transfer_sub"] as? String)
        let reply = try migrate([("transfer_sub", transferSub)], team: Self.teamC, bearer: bearer(team: Self.teamC))
        #expect(error(reply) == "invalid_request" && reply.header("X-Sandbox-Reason") == "app_not_transferred")
    }

    @Test func adminAPIRegistersUsersTransfersAndMovesTheClock() throws {
        let users = try f.postJSON("/__sandbox/users", """
            {"users":[{"team_id":"TEAMA12345","client_id":"com.example.app","sub":"002.x.1","private_email":true},
                      {"team_id":"TEAMA12345","client_id":"com.example.app","sub":"002.y.2","state":"revoked"}]}
            """)
        #expect(users.status == 200 && users.text.contains("\"registered\":2"))
        let bad = try f.postJSON("/__sandbox/users", #"{"users":[{"team_id":"T","client_id":"c","sub":"s","state":"gone"}]}"#)
        #expect(bad.status == 400 && bad.text.contains("users[0].state"))
        let transfer = try f.postJSON("/__sandbox/transfers",
                                      #"{"client_id":"com.example.app","from_team_id":"TEAMA12345","to_team_id":"TEAMC11111","transferred_at":1700000000}"#)
        #expect(transfer.status == 200)
        let clock = try f.postJSON("/__sandbox/clock", #"{"advance_seconds":10}"#)
        #expect(clock.text.contains("\"offset_seconds\":10"))
        let truth = try f.get("/__sandbox/migration-truth?team_id=TEAMA12345&client_id=com.example.app&target=TEAMB67890")
        let list = try #require(f.json(truth)?["users"] as? [[String: Any]])
        #expect(list.count == 5 && list.contains { $0["sub"] as? String == "002.y.2" && $0["revoked"] as? Bool == true })
        #expect(try f.get("/__sandbox/migration-truth?team_id=TEAMA12345").status == 400)
        // The old transfer (2023) is long closed: exports to C now get invalid_grant.
        #expect(error(try export("002.x.1", target: Self.teamC, bearer: bearer())) == "invalid_grant")
    }
}
