import Foundation
import Testing
@testable import AppleID
import SIWACrypto

/// Tokens that are not well-formed compact JWS are `malformed`, with a short reason, and are
/// rejected before the JWKS is fetched when the header already shows it.
@Suite struct VerificationMalformedTests {
    typealias F = VerificationFixtures

    private func malformedDetail(_ token: String, provider: ScriptedJWKSProvider? = nil) async throws -> String? {
        let verifier = try F.verifier(try provider ?? F.standardProvider())
        let error = await verifier.rejection(token)
        #expect(error?.reason == .malformed, "\(error.map(String.init(describing:)) ?? "accepted")")
        if let error, token.count > 30 { #expect(!error.detail.contains(token)) }
        return error?.detail
    }

    @Test func truncatedTokensAreMalformedWhereverTheyAreCut() async throws {
        let token = try F.rs256(F.idClaims(), key: try F.keys()[0])
        let dots = token.indices.filter { token[$0] == "." }
        let cuts = [1, 2, 3, 10, 100, 341, 342] + [token.distance(from: token.startIndex, to: dots[1])]
            + [token.distance(from: token.startIndex, to: dots[1]) + 1, token.count / 2, 20]
        for cut in cuts {
            let truncated = String(token.dropLast(cut))
            let detail = try await malformedDetail(truncated)
            #expect(detail != nil, "cut \(cut)")
        }
        #expect(try await malformedDetail(String(token.dropLast(2))) == "signature is 255 bytes; RS256 with this 2048-bit key needs 256")
        #expect(try await malformedDetail(String(token.dropLast(1))) == "signature segment is not unpadded base64url")
        #expect(try await malformedDetail(String(token[..<dots[1]])) == "expected 3 dot-separated segments, got 2")
        #expect(try await malformedDetail(String(token[...dots[1]])) == "signature segment is empty")
    }

    @Test func hugeHeaderIsRejectedBeforeParsingOrFetching() async throws {
        let provider = try F.standardProvider()
        let padding = String(repeating: "A", count: 4000)
        let token = try F.rs256(F.idClaims(), key: try F.keys()[0], extraHeader: ["x5c": padding])
        let detail = try await malformedDetail(token, provider: provider)
        #expect(detail?.hasPrefix("header is ") == true && detail?.hasSuffix("bytes encoded; the limit is 4096") == true)
        #expect(provider.fetches == 0)
        let notJSON = String(repeating: "A", count: 5000) + ".e30.c2ln"
        #expect(try await malformedDetail(notJSON, provider: provider) == "header is 5000 bytes encoded; the limit is 4096")
    }

    @Test func oversizedTokenIsRejected() async throws {
        let provider = try F.standardProvider()
        let token = try F.rs256(F.claims(["filler": String(repeating: "z", count: 13_000)]), key: try F.keys()[0])
        #expect(token.utf8.count > JWTVerifier.maxTokenBytes)
        let detail = try await malformedDetail(token, provider: provider)
        #expect(detail == "token is \(token.utf8.count) bytes; the limit is 16384")
        #expect(provider.fetches == 0)
    }

    @Test(arguments: [
        ("", "token is empty"),
        ("   \n", "token is empty"),
        ("abc", "expected 3 dot-separated segments, got 1"),
        ("a.b.c.d", "expected 3 dot-separated segments, got 4"),
        ("a.b.c.d.e", "expected 3 dot-separated segments, got 5"),
        (".e30.c2ln", "header segment is empty"),
        ("eyJhbGciOiJSUzI1NiJ9=.e30.c2ln", "header segment is not unpadded base64url"),
        ("ey+hbGc.e30.c2ln", "header segment is not unpadded base64url"),
        ("bm90IGpzb24.e30.c2ln", "header is not a JSON object"),
        ("WzFd.e30.c2ln", "header is not a JSON object"),
    ])
    func shapeErrorsNameTheProblem(_ token: String, _ expected: String) async throws {
        #expect(try await malformedDetail(token) == expected)
    }

    @Test func headerFieldErrors() async throws {
        let key = try F.keys()[0]
        let sign: ([UInt8]) throws -> [UInt8] = { try key.signRS256($0) }
        let noKid = try F.raw(header: #"{"alg":"RS256"}"#, payload: "{}", sign: sign)
        #expect(try await malformedDetail(noKid) == "header kid: missing or not a string")
        let numericKid = try F.raw(header: #"{"alg":"RS256","kid":7}"#, payload: "{}", sign: sign)
        #expect(try await malformedDetail(numericKid) == "header kid: missing or not a string")
        let crit = try F.raw(header: #"{"alg":"RS256","kid":"KEYAAA1","crit":["exp"],"exp":1}"#, payload: "{}", sign: sign)
        #expect(try await malformedDetail(crit) == "header crit: critical extensions are not supported")
        let nested = String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000)
        let deep = try F.raw(header: #"{"alg":"RS256","kid":"KEYAAA1","x":\#(nested)}"#, payload: "{}", sign: sign)
        #expect(try await malformedDetail(deep) == "header is not a JSON object")
    }

    @Test func payloadErrorsAfterAValidSignature() async throws {
        let key = try F.keys()[0]
        let header = #"{"alg":"RS256","kid":"KEYAAA1"}"#
        let sign: ([UInt8]) throws -> [UInt8] = { try key.signRS256($0) }
        #expect(try await malformedDetail(try F.raw(header: header, payload: "not json", sign: sign)) == "payload is not a JSON object")
        #expect(try await malformedDetail(try F.raw(header: header, payload: "[1]", sign: sign)) == "payload is not a JSON object")
        let noExp = #"{"iss":"https://appleid.apple.com","aud":"com.example.app"}"#
        #expect(try await malformedDetail(try F.raw(header: header, payload: noExp, sign: sign)) == "claim exp: missing")
        let badExp = #"{"iss":"https://appleid.apple.com","aud":"com.example.app","exp":"soon"}"#
        #expect(try await malformedDetail(try F.raw(header: header, payload: badExp, sign: sign)) == "claim exp: string is not a number")
        let hugeExp = #"{"iss":"https://appleid.apple.com","aud":"com.example.app","exp":1e300}"#
        #expect(try await malformedDetail(try F.raw(header: header, payload: hugeExp, sign: sign)) == "claim exp: number out of range")
        let badPayloadB64 = "eyJhbGciOiJSUzI1NiIsImtpZCI6IktFWUFBQTEifQ.e3!9.c2ln"
        #expect(try await malformedDetail(badPayloadB64) == "payload segment is not unpadded base64url")
    }
}
