import Testing
@testable import SIWACrypto

@Suite struct JWSTests {
    @Test func compactAndSplitRoundTrip() throws {
        let key = try P256PrivateKey.generate()
        let token = try JWS.compact(header: ["alg": "ES256", "kid": "K"], payload: ["aud": "https://appleid.apple.com", "iat": 5]) {
            input throws(CryptoError) in try key.signES256(input)
        }
        let parts = try JWS.split(token)
        #expect(String(decoding: parts.header, as: UTF8.self) == #"{"alg":"ES256","kid":"K"}"#)
        #expect(String(decoding: parts.payload, as: UTF8.self) == #"{"aud":"https://appleid.apple.com","iat":5}"#)
        #expect(parts.signature.count == 64)
        #expect(String(decoding: parts.signingInput, as: UTF8.self) == token.split(separator: ".").prefix(2).joined(separator: "."))
        #expect(key.publicKey.verifyES256(signature: parts.signature, message: parts.signingInput))
    }

    static let malformed: [(String, String)] = [
        ("a.b", "jws.segments"),
        ("a.b.c.d", "jws.segments"),
        ("a..c", "jws.segments"),
        ("", "jws.segments"),
        ("e30.e30.a+b", "jws.base64"),
        ("e30.e30=.AA", "jws.base64"),
        ("e30.e 30.AA", "jws.base64"),
        ("e30.e30.A", "jws.base64"),
        (String(repeating: "A", count: 16 * 1024 + 1), "jws.too_large"),
    ]

    @Test(arguments: malformed)
    func splitRejects(_ token: String, _ code: String) {
        do {
            _ = try JWS.split(token)
            Issue.record("accepted \(token.prefix(20))")
        } catch {
            #expect(error.code == code)
        }
    }

    @Test func signerErrorsPropagate() {
        #expect(throws: CryptoError(code: "x", message: "y")) {
            try JWS.compact(headerJSON: [], payloadJSON: []) { _ throws(CryptoError) in throw CryptoError(code: "x", message: "y") }
        }
    }
}
