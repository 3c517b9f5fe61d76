import Foundation
import SIWACrypto
import Testing
@testable import SIWAJobs

/// What the receiver reads before anything is verified: the body shape and the `jti`.
@Suite struct NotificationParsingTests {
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
