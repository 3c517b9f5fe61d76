import Foundation
import Testing
@testable import SIWACrypto

@Suite struct ES256Tests {
    let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0".utf8)

    @Test func signaturesAreRaw64BytesAndVerify() throws {
        let key = try P256PrivateKey.generate()
        for _ in 0..<50 {
            let signature = try key.signES256(message)
            #expect(signature.count == 64)
            #expect(key.publicKey.verifyES256(signature: signature, message: message))
        }
    }

    @Test func verifyRejectsTamperingDERAndWrongKey() throws {
        let key = try P256PrivateKey(pem: TestKeys.p256PKCS8)
        let signature = try key.signES256(message)
        var flipped = signature
        flipped[10] ^= 0x01
        #expect(!key.publicKey.verifyES256(signature: flipped, message: message))
        #expect(!key.publicKey.verifyES256(signature: signature, message: message + [0x2E]))
        let der = try #require(ECDSASignature.derFromRaw(signature))
        #expect(der.first == 0x30)
        #expect(!key.publicKey.verifyES256(signature: der, message: message))
        #expect(!key.publicKey.verifyES256(signature: [], message: message))
        #expect(!key.publicKey.verifyES256(signature: [UInt8](repeating: 0, count: 64), message: message))
        let other = try P256PrivateKey.generate()
        #expect(!other.publicKey.verifyES256(signature: signature, message: message))
    }

    @Test func derRawConversionRoundTripsWithLeadingZeros() throws {
        var raw = [UInt8](repeating: 0, count: 64)
        raw[3] = 0x7F; raw[31] = 1; raw[32] = 0xFF; raw[63] = 9
        let der = try #require(ECDSASignature.derFromRaw(raw))
        #expect(ECDSASignature.rawFromDER(der) == raw)
        #expect(der == DERForTests.fromRaw(raw))
        #expect(ECDSASignature.rawFromDER([0x30, 0x00]) == nil)
        #expect(ECDSASignature.derFromRaw([1, 2, 3]) == nil)
    }

    @Test func publicKeyFromCoordinates() throws {
        let key = try P256PrivateKey(pem: TestKeys.p256PKCS8)
        let pub = key.publicKey
        #expect(pub.x.count == 32 && pub.y.count == 32)
        let rebuilt = try P256PublicKey(x: pub.x, y: pub.y)
        #expect(rebuilt.spkiPEM == pub.spkiPEM)
        #expect(rebuilt.verifyES256(signature: try key.signES256(message), message: message))
        var offCurve = pub.y
        offCurve[31] ^= 1
        #expect(throws: CryptoError.self) { try P256PublicKey(x: pub.x, y: offCurve) }
        #expect(throws: CryptoError.self) { try P256PublicKey(x: Array(pub.x.dropFirst()), y: pub.y) }
    }

    @Test func concurrentSigningWithOneKey() async throws {
        let key = try P256PrivateKey.generate()
        let pub = key.publicKey
        let message = self.message
        let results = await withTaskGroup(of: Bool.self, returning: [Bool].self) { group in
            for _ in 0..<200 {
                group.addTask {
                    guard let s = try? key.signES256(message) else { return false }
                    return pub.verifyES256(signature: s, message: message)
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 200 && results.allSatisfy { $0 })
    }

    /// External check: the openssl CLI verifies our signature once converted to DER.
    @Test func opensslCLIVerifiesES256JWS() throws {
        let key = try P256PrivateKey.generate()
        let header = Array(#"{"alg":"ES256","kid":"ABC123DEFG"}"#.utf8)
        let payload = Array(#"{"iss":"DEF123GHIJ","sub":"com.example.app"}"#.utf8)
        for _ in 0..<3 {
            let token = try JWS.es256(headerJSON: header, payloadJSON: payload, key: key)
            let output = try ExternalTools.opensslVerifyES256(token: token, publicKeyPEM: key.publicKey.spkiPEM)
            #expect(output.contains("Verified OK"), "openssl said: \(output)")
            #expect(try JWS.split(token).signature.count == 64)
        }
        // and a tampered input is refused by openssl too
        let token = try JWS.es256(headerJSON: header, payloadJSON: payload, key: key)
        let parts = token.split(separator: ".")
        let forged = "\(parts[0]).\(Base64URL.encode(Array(#"{"iss":"X"}"#.utf8))).\(parts[2])"
        let output = try ExternalTools.opensslVerifyES256(token: forged, publicKeyPEM: key.publicKey.spkiPEM)
        #expect(!output.contains("Verified OK"))
    }
}
