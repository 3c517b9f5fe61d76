@testable import AppleID
import Testing

/// Which scheme a request may use (`CURLOPT_PROTOCOLS_STR`): https anywhere, plain http only to a
/// loopback address, nothing else (README "Hardening").
@Suite struct AllowedProtocolTests {
    @Test(arguments: [
        ("https://appleid.apple.com/auth/token", "https"), ("HTTPS://appleid.apple.com/auth/keys", "https"),
        ("HttpS://127.0.0.1:8443/auth/token", "https"), ("http://127.0.0.1:8080/auth/token", "http"),
        ("http://[::1]:8080/auth/token", "http"),
    ])
    func allowed(url: String, expected: String) {
        #expect(CurlEngine.allowedProtocol(for: url) == expected)
    }

    @Test(arguments: ["http://appleid.apple.com/auth/token", "https:/appleid.apple.com", "https\u{1A}//x.example/a",
                      "ftp://127.0.0.1/x", "https://", "file:///etc/passwd", "httpx://127.0.0.1/"])
    func refused(url: String) {
        #expect(CurlEngine.allowedProtocol(for: url) == nil, "\(url)")
    }
}
