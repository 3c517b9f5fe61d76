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

    @Test func controlCharactersAreEscapedAsUnicode() {
        #expect(JSONText.quote("\u{00}\u{1f}") == "\"\\u0000\\u001f\"")
        #expect(JSONText.quote("\r\n\t") == "\"\\r\\n\\t\"")
    }
}
