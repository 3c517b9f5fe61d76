import Foundation
import Testing
@testable import AppleID
import SIWACrypto

/// Server-to-server notification claims (apple-api.md §8.3): `events` as an object or a
/// JSON-encoded string, `account-deleted` normalised, `event_time` in s or ms, string booleans.
@Suite struct VerificationNotificationTests {
    typealias F = VerificationFixtures

    /// Notification claims as Apple sends them: no top-level sub, a jti, and `events`.
    private func notification(_ events: any Sendable) -> [String: any Sendable] {
        ["iss": "https://appleid.apple.com", "aud": F.clientIDs[0], "iat": F.now - 5, "exp": F.now + 3600,
         "jti": "Q9dTj3dL8ZyBU2b0k7Wf1A", "events": events]
    }

    private func event(_ object: [String: any Sendable], asString: Bool) throws -> any Sendable {
        guard asString else { return object }
        let data = try JSONSerialization.data(withJSONObject: object.mapValues { $0 as Any }, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }

    private func verify(_ events: any Sendable) async throws -> VerifiedClaims {
        let verifier = try F.verifier(try F.standardProvider())
        return try await verifier.verify(try F.rs256(notification(events), key: try F.keys()[0]))
    }

    private func verify(_ events: [String: any Sendable]) async throws -> VerifiedClaims {
        try await verify(events as any Sendable)
    }

    private func rejection(_ events: [String: any Sendable]) async throws -> JWTVerificationError? {
        try await rejection(events as any Sendable)
    }

    private func rejection(_ events: any Sendable) async throws -> JWTVerificationError? {
        let verifier = try F.verifier(try F.standardProvider())
        return await verifier.rejection(try F.rs256(notification(events), key: try F.keys()[0]))
    }

    @Test(arguments: [
        ("email-disabled", "email-disabled"), ("email-enabled", "email-enabled"),
        ("consent-revoked", "consent-revoked"), ("account-delete", "account-delete"),
        ("account-deleted", "account-delete"), (" Account-Deleted ", "account-delete"),
    ], [false, true])
    func eachTypeInEachEncoding(_ type: (raw: String, normalised: String), _ asString: Bool) async throws {
        let events = try event(["type": type.raw, "sub": "001234.abc.0001", "event_time": 1_508_184_845], asString: asString)
        let claims = try await verify(events)
        let decoded = try #require(claims.events)
        #expect(decoded.type == type.normalised)
        #expect(decoded.kind?.rawValue == type.normalised)
        #expect(decoded.sub == "001234.abc.0001")
        #expect(decoded.eventTime == Date(timeIntervalSince1970: 1_508_184_845))
        #expect(claims.jti == "Q9dTj3dL8ZyBU2b0k7Wf1A")
        #expect(claims.sub == nil)
    }

    @Test func eventTimeInSecondsOrMilliseconds() async throws {
        let ms = try await verify(try event(["type": "consent-revoked", "sub": "s", "event_time": 1_657_617_063_012], asString: true))
        #expect(ms.events?.eventTime == Date(timeIntervalSince1970: 1_657_617_063.012))
        let seconds = try await verify(["type": "consent-revoked", "sub": "s", "event_time": 1_657_617_063])
        #expect(seconds.events?.eventTime == Date(timeIntervalSince1970: 1_657_617_063))
        let boundary = try await verify(["type": "consent-revoked", "sub": "s", "event_time": 100_000_000_000])
        #expect(boundary.events?.eventTime == Date(timeIntervalSince1970: 100_000_000_000), "10^11 itself is seconds")
        let justAbove = try await verify(["type": "consent-revoked", "sub": "s", "event_time": 100_000_000_001])
        #expect(justAbove.events?.eventTime == Date(timeIntervalSince1970: 100_000_000.001))
        let text = try await verify(["type": "consent-revoked", "sub": "s", "event_time": "1657617063012"])
        #expect(text.events?.eventTime == Date(timeIntervalSince1970: 1_657_617_063.012))
        let absent = try await verify(["type": "consent-revoked", "sub": "s"])
        #expect(absent.events?.eventTime == nil)
        #expect(try await rejection(["type": "consent-revoked", "sub": "s", "event_time": -1])?.detail == "claim events event_time: negative")
    }

    @Test(arguments: [false, true])
    func privateEmailAsBoolOrString(_ asString: Bool) async throws {
        for (value, expected) in [(true as any Sendable, true), ("true" as any Sendable, true), (false as any Sendable, false), ("false" as any Sendable, false)] {
            let events = try event(["type": "email-disabled", "sub": "s", "email": "x@privaterelay.appleid.com",
                                    "is_private_email": value, "event_time": 1_508_184_845], asString: asString)
            let decoded = try #require(try await verify(events).events)
            #expect(decoded.isPrivateEmail == expected)
            #expect(decoded.email == "x@privaterelay.appleid.com")
        }
    }

    /// Issue 8 §10: `1`/`"1"` are true, and an unknown shape reads as false with a warning
    /// instead of rejecting the (correctly signed) notification.
    @Test func privateEmailIsReadLeniently() async throws {
        for (value, expected, warning) in [(1 as any Sendable, true, nil), ("1" as any Sendable, true, nil), (0 as any Sendable, false, nil),
                                           ("yes" as any Sendable, false, "the string \"yes\"" as String?),
                                           (2 as any Sendable, false, "the number 2"), (["x": 1] as any Sendable, false, "an object")] {
            let claims = try await verify(try event(["type": "account-delete", "sub": "s", "is_private_email": value], asString: true))
            #expect(claims.events?.isPrivateEmail == expected)
            #expect(claims.warnings == (warning.map { ["claim events is_private_email: \($0) is not a boolean; read as false"] } ?? []))
        }
    }

    /// Issue 8 §10: milliseconds are kept as integers; formatting a `Date` built by dividing by
    /// 1000 lost 1 ms on about half of the values (496 of these 1000).
    @Test func eventTimeMillisecondsAreExact() async throws {
        var lost: [Int64] = []
        for ms in Int64(1_657_617_063_000)..<Int64(1_657_617_064_000) {
            let event = NotificationEvent(type: "consent-revoked", sub: "s", email: nil, isPrivateEmail: nil, eventTimeMilliseconds: ms)
            if event.eventTimeISO8601 != "2022-07-12T09:11:03.\(String(format: "%03d", ms % 1000))Z" { lost.append(ms) }
        }
        #expect(lost.isEmpty, "\(lost.count) values changed, e.g. \(lost.prefix(3))")
        let decoded = try await verify(["type": "consent-revoked", "sub": "s", "event_time": 1_657_617_063_005])
        #expect(decoded.events?.eventTimeMilliseconds == 1_657_617_063_005)
        #expect(decoded.events?.eventTimeISO8601 == "2022-07-12T09:11:03.005Z")
        let seconds = try await verify(["type": "consent-revoked", "sub": "s", "event_time": 1_657_617_063])
        #expect(seconds.events?.eventTimeMilliseconds == 1_657_617_063_000)
        #expect(NotificationEvent.iso8601(milliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(NotificationEvent.iso8601(milliseconds: 1) == "1970-01-01T00:00:00.001Z")
    }

    @Test func unknownTypesAreKeptForTheCallerToRecord() async throws {
        let decoded = try #require(try await verify(["type": "account-frozen", "sub": "s"]).events)
        #expect(decoded.type == "account-frozen")
        #expect(decoded.kind == nil)
    }

    @Test func malformedEventsNameTheField() async throws {
        #expect(try await rejection(42) == JWTVerificationError(.malformed, "claim events: expected an object or a JSON-encoded object string, got a number"))
        #expect(try await rejection("{not json")?.detail == "claim events: string does not hold a JSON object")
        #expect(try await rejection(#"["a"]"#)?.detail == "claim events: string does not hold a JSON object")
        #expect(try await rejection(["sub": "s"])?.detail == "claim events type: missing")
        #expect(try await rejection(["type": "consent-revoked"])?.detail == "claim events sub: missing")
        #expect(try await rejection(["type": "consent-revoked", "sub": ""])?.detail == "claim events sub: empty")
        #expect(try await rejection(["type": 3, "sub": "s"])?.detail == "claim events type: expected a string, got a number")
    }

    @Test func notificationsStillNeedTheRightAudienceAndIssuer() async throws {
        let verifier = try F.verifier(try F.standardProvider())
        var claims = notification(["type": "account-delete", "sub": "s"])
        claims["aud"] = "com.someone.else"
        #expect(await verifier.rejection(try F.rs256(claims, key: try F.keys()[0]))?.reason == .wrongAudience)
        claims["aud"] = F.clientIDs[1]
        claims["iss"] = "https://appleid.apple.com.evil"
        #expect(await verifier.rejection(try F.rs256(claims, key: try F.keys()[0]))?.reason == .wrongIssuer)
    }

    @Test func eventEncodesEventTimeAsISO8601WithMilliseconds() throws {
        let event = NotificationEvent(type: "email-disabled", sub: "s", email: "e@x", isPrivateEmail: true,
                                      eventTime: Date(timeIntervalSince1970: 1_657_617_063.012))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(event), as: UTF8.self)
        #expect(json == #"{"email":"e@x","event_time":"2022-07-12T09:11:03.012Z","is_private_email":true,"sub":"s","type":"email-disabled"}"#)
    }
}
