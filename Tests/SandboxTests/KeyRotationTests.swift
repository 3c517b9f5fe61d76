import AppleID
import Foundation
import SIWACrypto
import Testing
@testable import Sandbox

/// The sandbox signs notifications with its JWKS and rotates keys on command.
@Suite struct KeyRotationTests {
    func verifier(_ f: SandboxFixture) throws -> JWTVerifier {
        let document = try f.get("/auth/keys").body
        return try JWTVerifier(keys: JWKSCache(provider: StaticJWKSProvider(document: document)),
                               clientIDs: [SandboxFixture.clientID])
    }

    func mint(_ f: SandboxFixture, _ events: String) throws -> [String] {
        let reply = try f.postJSON("/__sandbox/notifications", #"{"events":[\#(events)]}"#)
        #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
        return try #require(f.json(reply)?["payloads"] as? [String])
    }

    @Test func notificationsInEveryShapeVerifyAgainstTheJWKS() async throws {
        let f = try SandboxFixture()
        let c = SandboxFixture.clientID
        let tokens = try mint(f, """
            {"type":"email-disabled","sub":"s1","client_id":"\(c)","encoding":"string","event_time_unit":"ms","event_time":1657617063,"email":"a@privaterelay.appleid.com","is_private_email":"true"},
            {"type":"email-enabled","sub":"s2","client_id":"\(c)","encoding":"object","event_time_unit":"s","event_time":1657617063,"is_private_email":false},
            {"type":"account-deleted","sub":"s3","client_id":"\(c)","jti":"fixed-jti"}
            """)
        let verifier = try verifier(f)
        let first = try await verifier.verify(tokens[0]).events
        #expect(first?.type == "email-disabled" && first?.isPrivateEmail == true)
        #expect(first?.eventTime == Date(timeIntervalSince1970: 1_657_617_063))
        let second = try await verifier.verify(tokens[1]).events
        #expect(second?.isPrivateEmail == false && second?.eventTime == Date(timeIntervalSince1970: 1_657_617_063))
        let third = try await verifier.verify(tokens[2])
        #expect(third.events?.type == "account-delete" && third.jti == "fixed-jti")
        // The string encoding really is a JSON string inside the payload.
        let payload = try #require(Base64URL.decode(String(tokens[0].split(separator: ".")[1])))
        #expect(String(decoding: payload, as: UTF8.self).contains(#""events":"{"#))
    }

    @Test func rotationPublishesTheNewKeyAndRetiresTheOldLater() async throws {
        let f = try SandboxFixture()
        let c = SandboxFixture.clientID
        let before = try mint(f, #"{"type":"consent-revoked","sub":"s","client_id":"\#(c)"}"#)[0]
        let oldKID = try #require(f.server.publishedKIDs.first)
        let rotated = try #require(f.json(try f.postJSON("/__sandbox/keys/rotate", "{}")))
        let newKID = try #require(rotated["kid"] as? String)
        #expect(rotated["published"] as? [String] == [newKID, oldKID])
        let after = try mint(f, #"{"type":"consent-revoked","sub":"s","client_id":"\#(c)"}"#)[0]
        let header = try #require(Base64URL.decode(String(after.split(separator: ".")[0])))
        #expect(String(decoding: header, as: UTF8.self).contains(newKID))
        let both = try verifier(f)
        _ = try await both.verify(before)
        _ = try await both.verify(after)

        let retired = try #require(f.json(try f.postJSON("/__sandbox/keys/retire", "{}")))
        #expect(retired["removed"] as? [String] == [oldKID])
        let onlyNew = try verifier(f)
        _ = try await onlyNew.verify(after)
        await #expect(throws: JWTVerificationError.self) { _ = try await onlyNew.verify(before) }
        #expect(try f.get("/__sandbox/keys/rotate").status == 405)
        #expect(try f.postJSON("/__sandbox/notifications", #"{"events":[{"type":"x"}]}"#).status == 400)
    }

    /// Issue 8 §10: a key that signs before `/auth/keys` serves it, published later.
    @Test func anUnpublishedKeySignsUntilPublished() async throws {
        let f = try SandboxFixture()
        let c = SandboxFixture.clientID
        let oldKID = try #require(f.server.publishedKIDs.first)
        let rotated = try #require(f.json(try f.postJSON("/__sandbox/keys/rotate", #"{"publish":false}"#)))
        let newKID = try #require(rotated["kid"] as? String)
        #expect(rotated["published"] as? [String] == [oldKID])
        let token = try mint(f, #"{"type":"account-delete","sub":"s","client_id":"\#(c)","is_private_email":1}"#)[0]
        let unpublished = await (try verifier(f)).rejection(token)
        #expect(unpublished?.reason == .unknownKID, "\(String(describing: unpublished))")
        let published = try #require(f.json(try f.postJSON("/__sandbox/keys/publish", "")))
        #expect(published["published"] as? [String] == [newKID, oldKID])
        let claims = try await verifier(f).verify(token)
        #expect(claims.events?.isPrivateEmail == true, "is_private_email sent as the number 1")
        #expect(try f.get("/__sandbox/keys/publish").status == 405)
    }
}

extension JWTVerifier {
    func rejection(_ token: String) async -> JWTVerificationError? {
        do {
            _ = try await verify(token)
            return nil
        } catch {
            return error
        }
    }
}
