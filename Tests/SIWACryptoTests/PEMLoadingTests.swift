import Testing
@testable import SIWACrypto

@Suite struct PEMLoadingTests {
    /// The same P-256 key in the layouts seen in env vars, secret stores and copy-paste.
    static var layouts: [(String, String)] {
        let pem = TestKeys.p256PKCS8
        let lines = pem.split(separator: "\n").map(String.init)
        let body = lines.dropFirst().dropLast().joined()
        return [
            ("standard", pem),
            ("sec1", TestKeys.p256SEC1),
            ("crlf", lines.joined(separator: "\r\n") + "\r\n"),
            ("literal backslash-n", lines.joined(separator: "\\n")),
            ("one-line body", "\(lines[0])\n\(body)\n\(lines.last ?? "")"),
            ("all on one line", "\(lines[0]) \(body) \(lines.last ?? "")"),
            ("quoted with whitespace", "  \"\(lines.joined(separator: "\\n"))\"\n"),
            ("single-quoted", "'\(pem)'"),
            ("body wrapped at 40", "\(lines[0])\n" + stride(from: 0, to: body.count, by: 40).map { i in
                let start = body.index(body.startIndex, offsetBy: i)
                let end = body.index(start, offsetBy: 40, limitedBy: body.endIndex) ?? body.endIndex
                return String(body[start..<end])
            }.joined(separator: "\n") + "\n\(lines.last ?? "")"),
        ]
    }

    @Test(arguments: layouts)
    func loadsEveryLayout(_ name: String, _ text: String) throws {
        let reference = try P256PrivateKey(pem: TestKeys.p256PKCS8)
        let key = try P256PrivateKey(pem: text)
        #expect(key.publicKey.x == reference.publicKey.x, "layout \(name)")
        #expect(key.publicKey.y == reference.publicKey.y, "layout \(name)")
        // and the loaded key really signs for that public key
        let signature = try key.signES256(Array("hello".utf8))
        #expect(reference.publicKey.verifyES256(signature: signature, message: Array("hello".utf8)))
    }

    static let failures: [(String, String, String)] = [
        ("not pem", "hello world", "pem.not_pem"),
        ("empty", "", "pem.not_pem"),
        ("no end", "-----BEGIN PRIVATE KEY-----\nAAAA\n", "pem.not_pem"),
        ("bad base64", "-----BEGIN PRIVATE KEY-----\nMIG*T\n-----END PRIVATE KEY-----", "pem.base64"),
        ("empty body", "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----", "pem.base64"),
        ("garbage der", "-----BEGIN PRIVATE KEY-----\nAAAAAAAA\n-----END PRIVATE KEY-----", "key.invalid"),
        ("label mismatch", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PUBLIC KEY-----", "pem.label_mismatch"),
        ("p384", TestKeys.p384PKCS8, "key.not_p256"),
        ("rsa pkcs8", TestKeys.rsaPKCS8, "key.not_ec"),
        ("rsa pkcs1", TestKeys.rsaPKCS1, "key.not_ec"),
        ("ed25519", TestKeys.ed25519, "key.not_ec"),
        ("encrypted pkcs8", TestKeys.p256Encrypted, "pem.encrypted"),
        ("encrypted sec1", TestKeys.p256SEC1Encrypted, "pem.encrypted"),
        ("public key", TestKeys.p256Public, "key.not_private"),
    ]

    @Test(arguments: failures)
    func namesTheProblem(_ name: String, _ text: String, _ code: String) {
        #expect(throws: CryptoError.self, "case \(name)") { try P256PrivateKey(pem: text) }
        do {
            _ = try P256PrivateKey(pem: text)
        } catch {
            #expect(error.code == code, "case \(name): \(error)")
            #expect(!error.description.contains("MHcCAQEE"), "no key material in errors")
        }
    }

    @Test func pkcs8PEMRoundTrips() throws {
        let key = try P256PrivateKey(pem: TestKeys.p256SEC1)
        let pem = key.pkcs8PEM
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        let again = try P256PrivateKey(pem: pem)
        #expect(again.publicKey.x == key.publicKey.x)
    }

    @Test func publicKeyPEMLoadsAndRejectsWrongCurve() throws {
        let key = try P256PrivateKey(pem: TestKeys.p256PKCS8)
        let pub = try P256PublicKey(pem: TestKeys.p256Public)
        #expect(pub.x == key.publicKey.x && pub.y == key.publicKey.y)
        #expect(try P256PublicKey(pem: key.publicKey.spkiPEM).x == pub.x)
        #expect(throws: CryptoError.self) { try P256PublicKey(pem: TestKeys.p256PKCS8) }
        #expect(throws: CryptoError.self) { try P256PublicKey(pem: try RSAPrivateKey(pem: TestKeys.rsaPKCS8).publicKey.spkiPEM) }
    }
}
