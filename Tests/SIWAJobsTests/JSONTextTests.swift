import Foundation
import SIWACore
import Testing

/// The hand-built JSON of result and audit details must be what Foundation reads back.
@Suite struct JSONTextTests {
    @Test func objectsRoundTripThroughFoundationWithNilsLeftOut() throws {
        let tricky = "quote \" back\\slash / tab\t new\nline \u{01} ünïcödé 🚀"
        let text = JSONText.object(["b": tricky, "a": "plain", "skipped": nil, "": "empty key"])
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String])
        #expect(parsed == ["b": tricky, "a": "plain", "": "empty key"])
        #expect(text.hasPrefix("{\"\":\"empty key\",\"a\":\"plain\",\"b\":"), "keys sorted: \(text)")
        #expect(JSONText.object([:]) == "{}")
        #expect(JSONText.object(["only": nil]) == "{}")
    }

    /// The literal-pairs form writes the same text as the dictionary form (sorted, nils left out).
    @Test func pairsAndDictionaryGiveTheSameText() {
        let fingerprint = "hmac:0123456789abcdef"
        #expect(JSONText.object(pairs: ["token_fingerprint": fingerprint, "warning": nil])
            == JSONText.object(["token_fingerprint": fingerprint, "warning": nil]))
        #expect(JSONText.object(pairs: ["z": "1", "a": "2 \"q\"", "m": nil, "b": "é"])
            == JSONText.object(["z": "1", "a": "2 \"q\"", "m": nil, "b": "é"]))
        #expect(JSONText.object(pairs: ["token_fingerprint": fingerprint, "apple_error": "invalid_grant"])
            == "{\"apple_error\":\"invalid_grant\",\"token_fingerprint\":\"hmac:0123456789abcdef\"}")
        #expect(JSONText.object(pairs: [:]) == "{}")
        #expect(JSONText.object(pairs: ["b": "1", "a": "2", "b": "3", "c": nil]) == "{\"a\":\"2\",\"b\":\"1\",\"b\":\"3\"}")
        #expect(JSONText.object(pairs: ["only": nil, "x": nil]) == "{}")
    }

    /// Text without anything to escape is copied whole; text with escapes goes the long way: both
    /// give the literal JSON reads back.
    @Test func quoteWithAndWithoutEscapes() throws {
        for text in ["", "plain", "ünïcödé 🚀", "a\"b", "back\\slash", "x\u{7f}y", "end\u{1f}"] {
            let quoted = JSONText.quote(text)
            let parsed = try #require(try JSONSerialization.jsonObject(with: Data("[\(quoted)]".utf8)) as? [String])
            #expect(parsed == [text], "\(quoted)")
        }
        #expect(JSONText.quote("plain") == "\"plain\"")
    }

    @Test func controlCharactersAreEscapedAsUnicode() {
        #expect(JSONText.quote("\u{00}\u{1f}") == "\"\\u0000\\u001f\"")
        #expect(JSONText.quote("\r\n\t") == "\"\\r\\n\\t\"")
    }
}
