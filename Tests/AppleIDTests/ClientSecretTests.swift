import Foundation
import Testing
@testable import AppleID
import SIWACrypto

@Suite struct ClientSecretTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000.75)

    @Test func headerClaimsAndRawSignature() throws {
        let creds = try Fixtures.credentials()
        let (token, expiresAt) = try ClientSecret.mint(credentials: creds, now: now, lifetime: .seconds(3600))
        let header = Fixtures.jsonSegment(token, 0)
        let claims = Fixtures.jsonSegment(token, 1)
        #expect(header.count == 2)
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == Fixtures.keyID)
        #expect(claims["iss"] as? String == Fixtures.teamID)
        #expect(claims["sub"] as? String == Fixtures.clientID)
        #expect(claims["aud"] as? String == "https://appleid.apple.com")
        #expect(Fixtures.intClaim(claims["iat"]) == 1_699_999_940, "iat back-dated 60 s for clock skew")
        #expect(Fixtures.intClaim(claims["exp"]) == 1_700_003_600)
        #expect(expiresAt == Date(timeIntervalSince1970: 1_700_003_600))
        let parts = try JWS.split(token)
        #expect(parts.signature.count == 64)
        #expect(creds.privateKey.publicKey.verifyES256(signature: parts.signature, message: parts.signingInput))
        #expect(!token.contains("\\/"), "slashes in aud are not escaped")
    }

    @Test(arguments: [(1e12, 15_776_940.0), (15_777_001, 15_776_940), (15_777_000, 15_776_940), (1, 60), (-5, 60), (86_400, 86_400)])
    func lifetimeIsClamped(_ requested: Double, _ expected: Double) throws {
        let (token, expiresAt) = try ClientSecret.mint(credentials: try Fixtures.credentials(), now: now, lifetime: .seconds(requested))
        let exp = (Fixtures.jsonSegment(token, 1)["exp"] as? NSNumber)?.doubleValue ?? 0
        #expect(exp - 1_700_000_000 == expected)
        #expect(expiresAt.timeIntervalSince1970 == exp)
        #expect(exp - now.timeIntervalSince1970 <= 15_777_000)
        let iat = (Fixtures.jsonSegment(token, 1)["iat"] as? NSNumber)?.doubleValue ?? 0
        #expect(exp - iat <= 15_777_000, "exp - iat within Apple's maximum even with the back-dated iat")
    }

    /// A `Duration` cannot be NaN or infinite (the old `TimeInterval` lifetime was refused as a
    /// configuration error then); its extremes still mint a secret Apple accepts.
    @Test(arguments: [Duration.seconds(Int64.max), .seconds(Int64.min), .zero, .nanoseconds(1), .milliseconds(59_999)])
    func extremeLifetimesAreClampedIntoApplesRange(_ lifetime: Duration) throws {
        let (token, expiresAt) = try ClientSecret.mint(credentials: try Fixtures.credentials(), now: now, lifetime: lifetime)
        let claims = Fixtures.jsonSegment(token, 1)
        let exp = Fixtures.intClaim(claims["exp"]), iat = Fixtures.intClaim(claims["iat"])
        #expect(exp - 1_700_000_000 == (lifetime > .seconds(60) ? 15_776_940 : 60))
        #expect(exp - iat <= 15_777_000 && exp > iat)
        #expect(expiresAt.timeIntervalSince1970 == Double(exp))
    }

    /// External check: openssl verifies the secret once its raw signature is DER-encoded.
    @Test func opensslCLIVerifiesMintedSecret() throws {
        let creds = try Fixtures.credentials()
        let dir = try Shell.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(creds.privateKey.publicKey.spkiPEM.utf8).write(to: dir.appendingPathComponent("pub.pem"))
        for round in 0..<3 {
            let token = try ClientSecret.mint(credentials: creds, now: Date(), lifetime: .seconds(3600)).token
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            let raw = try #require(Fixtures.base64URL(String(parts[2])))
            #expect(raw.count == 64, "signature segment must be raw R‖S")
            try Data((parts[0] + "." + parts[1]).utf8).write(to: dir.appendingPathComponent("input"))
            try Data(derFromRaw(raw)).write(to: dir.appendingPathComponent("sig.der"))
            let result = try Shell.run(["openssl", "dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", "input"], in: dir)
            #expect(result.text.contains("Verified OK"), "round \(round): \(result.text)")
        }
    }

    /// External check with Python `cryptography`, through scripts/verify-client-secret.py. Never
    /// skipped: without the package (scripts/install-deps.sh installs python3-cryptography) it fails.
    @Test func pythonScriptVerifiesMintedSecret() throws {
        try #require(Shell.pythonHasCryptography, "python3 cannot import cryptography: run scripts/install-deps.sh")
        let creds = try Fixtures.credentials()
        let dir = try Shell.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(creds.privateKey.publicKey.spkiPEM.utf8).write(to: dir.appendingPathComponent("pub.pem"))
        let script = Shell.repositoryRoot.appendingPathComponent("scripts/verify-client-secret.py").path
        let token = try ClientSecret.mint(credentials: creds, now: Date(), lifetime: .seconds(3600)).token
        let ok = try Shell.run(["python3", script, "pub.pem"], in: dir, stdin: token)
        #expect(ok.status == 0, "\(ok.text)")
        #expect(ok.text.contains("Verified OK"))
        let other = try ClientSecret.mint(credentials: try Fixtures.credentials(), now: Date(), lifetime: .seconds(3600)).token
        let bad = try Shell.run(["python3", script, "pub.pem"], in: dir, stdin: other)
        #expect(bad.status == 1)
    }
}
