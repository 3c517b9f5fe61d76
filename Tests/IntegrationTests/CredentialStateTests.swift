import Foundation
import Postgres
import Sandbox
import Testing
@testable import SIWAJobs

/// `siwa.credential_state` built from real flows through the binary: a validation (authorized,
/// and revoked by invalid_grant), notifications (consent revoked, account deleted) and a transfer
/// export (transferred).
@Suite(.serialized, .timeLimit(.minutes(20))) struct CredentialStateTests {
    static let teamB = "TEAMB67890"

    static func state(_ world: NotificationWorld, sub: String, clientID: String = SIWAWorld.clientID) async throws -> String {
        let rows = try await world.database.pool.query("""
            SELECT state || '/' || reason || '/' || (checked_at IS NOT NULL)::text AS answer
            FROM siwa.credential_state(\(SIWAWorld.teamID), \(clientID), \(sub))
            """)
        #expect(rows.count == 1, "exactly one answer for \(sub)")
        return try rows.first?.decode("answer") ?? "none"
    }

    @Test func eachOfTheFourStatesComesFromARealFlow() async throws {
        let world = try await NotificationWorld.create(accounts: 5)
        let subs = world.subs
        let tokens = try #require(world.world.seeded?.tokens)
        world.sandbox.model.registerRefreshTokens([SandboxRefreshToken(
            token: tokens[4].token, teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID, sub: tokens[4].sub, revoked: true)])
        #expect(try await Self.state(world, sub: subs[0]) == "authorized/not validated yet/false")

        // The nightly validation: 4 valid, 1 invalid_grant.
        _ = try await world.world.enqueue()
        let validation = try await BinaryProcess.run(["work", "--drain"], environment: world.environment())
        #expect(validation.status == 0, "\(validation.stderr.suffix(1500))")

        // Apple's notifications: consent revoked for user 1, account deleted for user 2.
        let statuses = await world.post(try world.sign([
            NotificationSpec(type: "consent-revoked", sub: subs[1], clientID: SIWAWorld.clientID),
            NotificationSpec(type: "account-delete", sub: subs[2], clientID: SIWAWorld.clientID),
        ]))
        #expect(statuses == [200: 2])
        try await world.waitFor("SELECT count(*)::int FROM siwa.notifications WHERE planned_job_id IS NOT NULL", atLeast: 2)
        let applied = try await BinaryProcess.run(["work", "--drain"], environment: world.environment())
        #expect(applied.status == 0, "\(applied.stderr.suffix(1500))")

        // A transfer export to team B: Apple knows user 3 for the transfer, refuses the others.
        world.sandbox.model.registerMigrationUsers([SandboxMigrationUser(
            teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID, sub: subs[3], privateEmail: false, revoked: false)])
        world.sandbox.model.recordAppTransfer(clientID: SIWAWorld.clientID, fromTeamID: SIWAWorld.teamID, toTeamID: Self.teamB,
                                              at: Date().timeIntervalSince1970 - 86_400)
        let export = try await BinaryProcess.run(
            ["transfer", "export", "--team-id", SIWAWorld.teamID, "--client-id", SIWAWorld.clientID, "--target", Self.teamB,
             "--transfer-date", TransferWindow.format(Date()), "--canary", "0"], environment: world.environment())
        #expect(export.status == 0, "\(export.stderr)")
        let exported = try await BinaryProcess.run(["work", "--drain"], environment: world.environment())
        #expect(exported.status == 1, "the users Apple does not know fail: \(exported.stderr.suffix(1500))")

        #expect(try await Self.state(world, sub: subs[0]) == "authorized/validated/true")
        #expect(try await Self.state(world, sub: subs[1]) == "revoked/consent revoked/true")
        #expect(try await Self.state(world, sub: subs[2]) == "notFound/deleted/true")
        #expect(try await Self.state(world, sub: subs[3]) == "transferred/exported to team \(Self.teamB)/true")
        #expect(try await Self.state(world, sub: subs[4]) == "revoked/invalid_grant/true")
        #expect(try await Self.state(world, sub: "000000.unknown.0000") == "notFound/no account/false")
        #expect(try await Self.state(world, sub: subs[0], clientID: "com.example.other") == "notFound/no account/false")

        // The view carries no token material.
        let columns = try await world.database.pool.query("""
            SELECT string_agg(column_name, ',' ORDER BY ordinal_position) AS names FROM information_schema.columns
            WHERE table_schema = 'siwa' AND table_name = 'credential_states'
            """)
        let names: String = try columns.first?.decode("names") ?? ""
        #expect(names == "account_id,team_id,client_id,sub,external_user_id,state,reason,checked_at")
        let view: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.credential_states")
        #expect(view == 5)
        await world.tearDown()
    }
}
