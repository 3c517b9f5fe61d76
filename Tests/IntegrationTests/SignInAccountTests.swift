import Foundation
import Postgres
import SIWACrypto
import Testing
@testable import SIWAJobs

/// How a sign-in finds or makes its account: by (team, sub), through `transfer_sub`, or new; what
/// it keeps; and what it answers when the app's own id is taken.
@Suite struct SignInAccountTests {
    @Test(.timeLimit(.minutes(3)))
    func aReturningUserKeepsTheAccountAndWhatWasGivenBefore() async throws {
        let w = try await SignInWorld.create()
        let db = w.database
        let first = try await w.authorize(["nonce": "n1", "email": "ada@example.com", "private_email": false])
        let firstID = try await w.submit(first, externalUserID: "app-42", name: "Ada Lovelace")
        #expect(try await w.outcomes([firstID])[firstID] == "created")
        let account: Int64 = try await db.scalar("SELECT account_id FROM siwa.sign_ins WHERE id = \(firstID)")
        let before: String = try await db.scalar("SELECT refresh_token_fingerprint FROM siwa.accounts WHERE id = \(account)")

        // Apple leaves the email out of this token; the app sends no name: nothing is blanked.
        let again = try await w.authorize(["nonce": "n2", "sub": first.sub, "email": "", "private_email": false])
        let againID = try await w.submit(again)
        #expect(try await w.outcomes([againID])[againID] == "linked")
        let row = try #require(try await db.pool.query("""
            SELECT id, external_user_id, name, email, refresh_token_fingerprint FROM siwa.accounts WHERE sub = \(first.sub)
            """).first)
        #expect(try row.decode("id", as: Int64.self) == account)
        #expect(try row.decode("external_user_id", as: String.self) == "app-42")
        #expect(try row.decode("name", as: String?.self) == "Ada Lovelace")
        #expect(try row.decode("refresh_token_fingerprint", as: String.self) != before, "the new refresh token is stored")
        #expect(try await db.scalar("SELECT account_id FROM siwa.sign_ins WHERE id = \(againID)", as: Int64.self) == account)

        // Another Apple user claiming the app's id "app-42" is a conflict, not a takeover.
        let other = try await w.authorize(["nonce": "n3"])
        let otherID = try await w.submit(other, externalUserID: "app-42")
        #expect(try await w.outcomes([otherID])[otherID] == "conflict")
        #expect(try await db.scalar("SELECT count(*)::int FROM siwa.accounts", as: Int.self) == 1)
        await w.tearDown()
    }

    @Test(.timeLimit(.minutes(3)))
    func aTransferSubDuringTheWindowLinksTheMigratedAccount() async throws {
        let w = try await SignInWorld.create()
        let db = w.database
        // An account migrated to this team by `transfer import` (its transfer_sub recorded), whose
        // user has not signed in since: the token names the recipient team's sub and the transfer_sub.
        let migrated: Int64 = try await db.scalar("""
            INSERT INTO siwa.accounts (external_user_id, team_id, client_id, sub, transfer_sub)
            VALUES ('app-7', \(SIWAWorld.teamID), \(SIWAWorld.clientID), '000999.premigration.0001', 'ts.777')
            RETURNING id
            """)
        let user = try await w.authorize(["nonce": "n", "transfer_sub": "ts.777"])
        let id = try await w.submit(user)
        #expect(try await w.outcomes([id])[id] == "linked")
        let row = try #require(try await db.pool.query("""
            SELECT account_id, matched_via FROM siwa.sign_ins WHERE id = \(id)
            """).first)
        #expect(try row.decode("account_id", as: Int64.self) == migrated)
        #expect(try row.decode("matched_via", as: String.self) == "transfer_sub:recipient")
        #expect(try await db.scalar("SELECT sub FROM siwa.accounts WHERE id = \(migrated)", as: String.self) == user.sub)
        #expect(try await db.scalar("SELECT count(*)::int FROM siwa.accounts", as: Int.self) == 1)
        await w.tearDown()
    }

    /// The `id_token` Apple returns with the tokens is read for its `sub` (its `iss` and `aud`
    /// must be Apple's and the client's); an unreadable one is no match.
    @Test(arguments: [
        (#"{"iss":"https://appleid.apple.com","aud":"com.example.siwa","sub":"0001.a.1"}"#, "0001.a.1"),
        (#"{"iss":"https://appleid.apple.com","aud":["x","com.example.siwa"],"sub":"0001.a.1"}"#, "0001.a.1"),
        (#"{"iss":"https://appleid.apple.com","aud":"com.example.other","sub":"0001.a.1"}"#, nil),
        (#"{"iss":"https://evil.example","aud":"com.example.siwa","sub":"0001.a.1"}"#, nil),
        ("not json", nil),
    ] as [(String, String?)])
    func theReturnedIDTokenNamesTheUser(_ claims: String, _ sub: String?) {
        let token = Base64URL.encode(Array(#"{"alg":"RS256","kid":"k"}"#.utf8)) + "." + Base64URL.encode(Array(claims.utf8)) + ".c2ln"
        #expect(SignInHandler.returnedSub(token, clientID: SIWAWorld.clientID) == sub)
        #expect(SignInHandler.returnedSub("only.two", clientID: SIWAWorld.clientID) == nil)
    }
}
