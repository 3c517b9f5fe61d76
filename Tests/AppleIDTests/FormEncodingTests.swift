import Testing
@testable import AppleID

@Suite struct FormEncodingTests {
    @Test func encodesEverythingButUnreserved() {
        #expect(FormEncoding.percentEncode("aZ09-._~") == "aZ09-._~")
        #expect(FormEncoding.percentEncode("a+b/c=d&e f") == "a%2Bb%2Fc%3Dd%26e%20f")
        #expect(FormEncoding.percentEncode("é*'!()") == "%C3%A9%2A%27%21%28%29")
        #expect(FormEncoding.encode([("grant_type", "refresh_token"), ("k", "")]) == "grant_type=refresh_token&k=")
    }

    @Test func decodeRoundTripsAndAcceptsPlusAsSpace() throws {
        let fields = [("refresh_token", "r+/=& x.0.é"), ("client_id", "com.example.app")]
        let decoded = try #require(FormEncoding.decode(FormEncoding.encode(fields)))
        #expect(decoded.map(\.0) == fields.map(\.0))
        #expect(decoded.map(\.1) == fields.map(\.1))
        #expect(FormEncoding.decode("a=b+c&d")?.map(\.1) == ["b c", ""])
        #expect(FormEncoding.decode("a=%zz") == nil)
        #expect(FormEncoding.decode("a=%4") == nil)
        #expect(FormEncoding.decode("a=%FF") == nil)  // not UTF-8
    }
}
