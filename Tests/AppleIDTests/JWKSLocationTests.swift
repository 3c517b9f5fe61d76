import Testing
@testable import AppleID

/// `token verify --jwks`: https anywhere, http only to loopback (exactly 127.0.0.0/8 or ::1; no names).
@Suite struct JWKSLocationTests {
    @Test(arguments: ["127.0.0.1", "127.255.0.9", "::1", "[::1]", "0:0:0:0:0:0:0:1"])
    func loopbackHosts(_ host: String) {
        #expect(JWKSLocation.isLoopback(host: host))
    }

    @Test(arguments: ["127.0.0.1.example.com", "127.example", "128.0.0.1", "10.0.0.1", "::2", "::ffff:127.0.0.1", "127.1",
                      "0177.0.0.1", "localhost", "LOCALHOST", "localhost.", "localhost.example.com", "mylocalhost", "127.evil.example.com",
                      "", "appleid.apple.com"])
    func otherHosts(_ host: String) {
        #expect(!JWKSLocation.isLoopback(host: host))
    }

    @Test func parse() throws {
        #expect(try JWKSLocation.parse("keys.json") == .file(path: "keys.json"))
        #expect(try JWKSLocation.parse("https://appleid.apple.com/auth/keys") == .url("https://appleid.apple.com/auth/keys"))
        #expect(try JWKSLocation.parse("http://127.0.0.1:8080/auth/keys") == .url("http://127.0.0.1:8080/auth/keys"))
        #expect(try JWKSLocation.parse("http://[::1]:8080/auth/keys") == .url("http://[::1]:8080/auth/keys"))
        // A user or password is refused, and the message never shows it.
        let withPassword = #expect(throws: JWKSLocation.Refusal.self) { try JWKSLocation.parse("http://u:s3cret@127.0.0.1/k") }
        #expect(withPassword?.description == "--jwks: the URL 'http://***@127.0.0.1/k' holds a user name or password; a JWKS is "
                + "public, give its URL without them")
        for refused in ["http://example.com/keys", "http://127.0.0.1.nip.io/keys", "http://localhost@evil.example/keys",
                        "http://127.0.0.1@evil.example/keys", "http://localhost:8080/keys", "http://[::1", "https://"] {
            #expect(throws: JWKSLocation.Refusal.self, "\(refused)") { try JWKSLocation.parse(refused) }
        }
        let error = #expect(throws: JWKSLocation.Refusal.self) { try JWKSLocation.parse("http://evil.example/k") }
        #expect(error?.description.hasPrefix("--jwks: plain http is refused for host 'evil.example'") == true)
    }
}
