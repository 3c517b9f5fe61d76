import Foundation
import SIWACrypto
import Testing
@testable import SIWAJobs

/// What the receiver reads before anything is verified: the body shape and the `jti`.
@Suite(.timeLimit(.minutes(20))) struct NotificationParsingTests {
    func token(_ payload: String) -> String {
        "eyJhbGciOiJSUzI1NiJ9." + Base64URL.encode(Array(payload.utf8)) + ".c2ln"
    }

    @Test func jtiIsReadOnlyFromAWellShapedPayload() {
        #expect(NotificationInbox.unverifiedJTI(token(#"{"jti":"abc-123"}"#)) == "abc-123")
        #expect(NotificationInbox.unverifiedJTI(token(#"{"jti":""}"#)) == nil)
        #expect(NotificationInbox.unverifiedJTI(token(#"{"jti":42}"#)) == nil)
        #expect(NotificationInbox.unverifiedJTI(token(#"{"jti":"\#(String(repeating: "j", count: 257))"}"#)) == nil)
        #expect(NotificationInbox.unverifiedJTI(token("not json")) == nil)
        #expect(NotificationInbox.unverifiedJTI("only.two") == nil)
        #expect(NotificationInbox.unverifiedJTI("a.b.c.d") == nil)
        #expect(NotificationInbox.unverifiedJTI("a.%%%.c") == nil)
        // The header must be a JSON object too; only the signature may be empty (unsecured JWS).
        let claims = Base64URL.encode(Array(#"{"jti":"j"}"#.utf8))
        #expect(NotificationInbox.unverifiedJTI("bm90IGpzb24." + claims + ".c2ln") == nil)
        #expect(NotificationInbox.unverifiedJTI("." + claims + ".c2ln") == nil)
        #expect(NotificationInbox.unverifiedJTI("eyJhbGciOiJub25lIn0." + claims + ".") == "j")
        #expect(NotificationInbox.unverifiedJTI("eyJhbGciOiJub25lIn0." + claims + ".%%") == nil)
    }

    @Test func onlyJSONContentTypesAreAccepted() {
        for good in ["application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8",
                     " application/json ", "text/json", "application/jwt+json"] {
            #expect(NotificationReceiver.isJSON(contentType: good), "\(good)")
        }
        for bad in [nil, "", "text/plain", "application/x-www-form-urlencoded", "application/jsonx", "multipart/form-data",
                    "application/+json"] as [String?] {
            #expect(!NotificationReceiver.isJSON(contentType: bad), "\(bad ?? "nil")")
        }
    }

    @Test func aDeadlineAnswersForAnOperationThatNeverDoes() async throws {
        #expect(try await Deadline.run(seconds: 60, waitingFor: "database") { 42 } == 42)
        await #expect(throws: DeadlineExceeded.self) {
            try await Deadline.run(seconds: 0.05, waitingFor: "database") {
                try await Task.sleep(for: .seconds(3600))
            }
        }
        struct Boom: Error {}
        await #expect(throws: Boom.self) {
            try await Deadline.run(seconds: 60, waitingFor: "database") { throw Boom() }
        }
        #expect(DeadlineExceeded(what: "database", seconds: 10).description == "no answer from the database within 10.0 s")
    }

    @Test func bodyMustBeAnObjectWithANonEmptyPayloadString() {
        #expect(NotificationReceiver.payload(Array(#"{"payload":"a.b.c"}"#.utf8)) == "a.b.c")
        #expect(NotificationReceiver.payload(Array(#"{"payload":"a.b.c","extra":1}"#.utf8)) == "a.b.c")
        for bad in [#"{"payload":""}"#, #"{"payload":null}"#, #"{"payload":["x"]}"#, #"{"other":"x"}"#, "[]", "\"x\"", "",
                    "{", #"{"payload":"a\u0000b"}"#] {
            #expect(NotificationReceiver.payload(Array(bad.utf8)) == nil, "\(bad)")
        }
    }
}
