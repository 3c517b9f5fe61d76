import Foundation
import Testing
@testable import AppleID

/// `JSONObjectScanner`, the strict reader of Apple's JSON answers that replaced
/// `JSONSerialization`: what it keeps, and a clear error (never a crash) for anything that is not
/// exactly one JSON object.
@Suite struct JSONObjectScannerTests {
    func scan(_ text: String) throws(JSONScanError) -> JSONObjectMembers {
        try JSONObjectScanner.members(of: Array(text.utf8))
    }

    func error(_ bytes: [UInt8]) -> JSONScanError? {
        do {
            _ = try JSONObjectScanner.members(of: bytes)
            return nil
        } catch {
            return error
        }
    }

    func error(_ text: String) -> JSONScanError? { error(Array(text.utf8)) }

    @Test func tokenResponseMembers() throws {
        let members = try scan(#"{"access_token":"a.b-c_d","token_type":"Bearer","expires_in":3600,"refresh_token":"r.0.x","id_token":"h.p.s"}"#)
        #expect(members["access_token"] == .string("a.b-c_d"))
        #expect(members["token_type"] == .string("Bearer"))
        #expect(members["expires_in"] == .number("3600"))
        #expect(members["refresh_token"] == .string("r.0.x"))
        #expect(members["id_token"] == .string("h.p.s"))
        #expect(members["missing"] == nil)
        #expect(members.members.map(\.key) == ["access_token", "token_type", "expires_in", "refresh_token", "id_token"])
    }

    @Test func scalarsNestedValuesAndWhitespace() throws {
        let members = try scan(" \r\n\t{ \"a\" : true , \"b\":false,\"c\":null,\"d\":-0.5e+3,\"e\":{\"x\":[1,{\"y\":[]},\"z\"]},\"f\":[] }\n ")
        #expect(members["a"] == .bool(true))
        #expect(members["b"] == .bool(false))
        #expect(members["c"] == .null)
        #expect(members["d"] == .number("-0.5e+3"))
        #expect(members["e"] == .nested)
        #expect(members["f"] == .nested)
        #expect(try scan("{}").members.isEmpty)
    }

    /// A JWKS (`GET /auth/keys`) is an object holding an array of objects: checked, not kept.
    @Test func jwksShapeIsAnObject() throws {
        let members = try scan(#"{"keys":[{"kty":"RSA","kid":"W6WcOKB","use":"sig","alg":"RS256","n":"2Zc5","e":"AQAB"}]}"#)
        #expect(members["keys"] == .nested)
    }

    @Test func escapesAreDecoded() throws {
        let members = try scan(#"{"s":"q\" b\\ s\/ \b\f\n\r\t é \u00e9 \ud83d\ude00 \u0041"}"#)
        #expect(members["s"] == .string("q\" b\\ s/ \u{8}\u{c}\n\r\t é é 😀 A"))
        #expect(try scan(#"{"k\u0065y":"v"}"#)["key"] == .string("v"))
        #expect(try scan("{\"utf8\":\"€ 日本\"}")["utf8"] == .string("€ 日本"))
    }

    @Test func aRepeatedKeyReadsAsItsLastValue() throws {
        #expect(try scan(#"{"error":"a","error":"invalid_grant"}"#)["error"] == .string("invalid_grant"))
    }

    static let malformed: [(String, String)] = [
        ("", "unexpected end of input"),
        ("   ", "unexpected end of input"),
        ("[]", "expected an object"),
        ("\"x\"", "expected an object"),
        ("null", "expected an object"),
        ("<html><body>Apple</body></html>", "expected an object"),
        (#"{"error":"invalid_gr"#, "unterminated string"),
        (#"{"error":"invalid_grant""#, "unexpected end of input"),
        (#"{"a":1"#, "unexpected end of input"),
        (#"{"a":1,}"#, "expected a member name"),
        (#"{"a" 1}"#, "expected ':' after a member name"),
        (#"{a:1}"#, "expected a member name"),
        (#"{'a':1}"#, "expected a member name"),
        (#"{"a":1 "b":2}"#, "expected ',' or '}' in an object"),
        (#"{"a":[1 2]}"#, "expected ',' or ']' in an array"),
        (#"{"a":[1,]}"#, "expected a value"),
        (#"{"a":tru}"#, "expected a value"),
        (#"{"a":nul"#, "unexpected end of input"),
        (#"{"a":NaN}"#, "expected a value"),
        (#"{"a":+1}"#, "expected a value"),
        (#"{"a":01}"#, "leading zero in a number"),
        (#"{"a":1.}"#, "expected a digit after '.'"),
        (#"{"a":.5}"#, "expected a value"),
        (#"{"a":1e}"#, "expected a digit in an exponent"),
        (#"{"a":-}"#, "expected a digit"),
        (#"{"a":"\x"}"#, "invalid escape in a string"),
        (#"{"a":"\u12"}"#, "invalid \\u escape"),
        (#"{"a":"\u12G4"}"#, "invalid \\u escape"),
        (#"{"a":"\ud83d"}"#, "unpaired surrogate in a string"),
        (#"{"a":"\ud83d\u0041"}"#, "unpaired surrogate in a string"),
        (#"{"a":"\ude00"}"#, "unpaired surrogate in a string"),
        ("{\"a\":\"tab\there\"}", "control character in a string"),
        ("{\"a\":\"line\nbreak\"}", "control character in a string"),
        (#"{"a":1} {"#, "text after the object"),
        (#"{"a":1}x"#, "text after the object"),
        (#"{"a":1}}"#, "text after the object"),
        (#"{"a":1} // comment"#, "text after the object"),
    ]

    @Test(arguments: malformed)
    func malformedInputIsAClearError(_ text: String, _ reason: String) throws {
        let failure = try #require(error(text), "accepted: \(text)")
        #expect(failure.reason == reason, "\(text): \(failure)")
        #expect(failure.offset >= 0 && failure.offset <= text.utf8.count)
    }

    @Test func invalidUTF8AndByteOrderMarksAreRefused() throws {
        let invalid: [UInt8] = Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        #expect(error(invalid)?.reason == "invalid UTF-8 in a string")
        let invalidAfterEscape: [UInt8] = Array(#"{"a":"\n"#.utf8) + [0xFF] + Array(#""}"#.utf8)
        #expect(error(invalidAfterEscape)?.reason == "invalid UTF-8 in a string")
        #expect(error([0xEF, 0xBB, 0xBF] + Array("{}".utf8))?.reason == "expected an object")
        #expect(error(Array("{\"a\":1}".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }) != nil)
    }

    @Test func nestingIsBounded() throws {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(error(#"{"a":"# + deep + "}")?.reason == "nested deeper than \(JSONObjectScanner.maxDepth)")
        let allowed = String(repeating: "[", count: JSONObjectScanner.maxDepth - 1) + String(repeating: "]", count: JSONObjectScanner.maxDepth - 1)
        #expect(try scan(#"{"a":"# + allowed + "}")["a"] == .nested)
    }

    /// Every prefix of a valid answer is refused (a truncated body), never accepted or crashed on.
    @Test func everyTruncationIsRefused() {
        let body = Array(#"{"access_token":"a\u00e9b","expires_in":3.6e3,"x":[true,{"y":null}],"z":"\ud83d\ude00"}"#.utf8)
        for length in 0..<body.count {
            #expect(error(Array(body[..<length])) != nil, "prefix of \(length) bytes accepted")
        }
        #expect(error(body) == nil)
    }

    /// The scanner agrees with JSONSerialization on what a valid object holds.
    @Test func agreesWithJSONSerialization() throws {
        let text = #"{"s":"a\"b\u00e9\ud83d\ude00","n":-12.5e-1,"i":42,"t":true,"nul":null,"o":{"k":[1,2]}}"#
        let members = try scan(text)
        let reference = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(members["s"] == .string(try #require(reference["s"] as? String)))
        guard case .number(let number)? = members["n"] else {
            Issue.record("n is not a number: \(String(describing: members["n"]))")
            return
        }
        #expect(Double(number) == (reference["n"] as? Double))
        #expect(members["i"] == .number("42"))
        #expect(Set(members.members.map(\.key)) == Set(reference.keys))
    }

    @Test func lenientReadersKeepTheirShapes() {
        #expect(LenientJSON.int(.number("3600")) == 3600)
        #expect(LenientJSON.int(.number("3600.0")) == 3600)
        #expect(LenientJSON.int(.number("36e2")) == 3600)
        #expect(LenientJSON.int(.number("3600.5")) == nil)
        #expect(LenientJSON.int(.number("1e15")) == nil)
        #expect(LenientJSON.int(.number("99999999999999999999")) == nil)
        #expect(LenientJSON.int(.string(" 300 ")) == 300)
        #expect(LenientJSON.int(.string("soon")) == nil)
        #expect(LenientJSON.int(.bool(true)) == nil)
        #expect(LenientJSON.int(nil) == nil)
        #expect(LenientJSON.bool(.bool(false)) == false)
        #expect(LenientJSON.bool(.string("TRUE")) == true)
        #expect(LenientJSON.bool(.string("0")) == false)
        #expect(LenientJSON.bool(.number("1")) == true)
        #expect(LenientJSON.bool(.number("0")) == false)
        #expect(LenientJSON.bool(.number("2")) == nil)
        #expect(LenientJSON.bool(.null) == nil)
        #expect(LenientJSON.nonEmptyString(.string("")) == nil)
        #expect(LenientJSON.nonEmptyString(.number("1")) == nil)
        #expect(LenientJSON.string(.string("")) == "")
    }
}
