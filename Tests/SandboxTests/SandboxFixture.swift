import Foundation
import SIWACrypto
import TestSupport
@testable import Sandbox

/// A running sandbox on a random loopback port with one registered team, plus helpers to mint
/// client secrets and call it over real HTTP. Its clock is a `ManualClock` that starts at the real
/// time and moves only when a test advances it.
final class SandboxFixture {
    static let teamID = "TEAMA12345"
    static let keyID = "KEYA123456"
    static let clientID = "com.example.app"
    static let otherClientID = "com.example.other"

    let server: SandboxServer
    let port: UInt16
    let key: P256PrivateKey
    let clock = ManualClock(start: Date())

    init(_ configuration: SandboxConfiguration = SandboxConfiguration()) throws {
        key = try P256PrivateKey.generate()
        server = SandboxServer(configuration: configuration, model: SandboxModel(clock: clock),
                               signer: try Self.sharedSigner.get())
        port = try server.start()
        try server.model.registerTeam(teamID: Self.teamID, keyID: Self.keyID, publicKeyPEM: key.publicKey.spkiPEM,
                                      clientIDs: [Self.clientID, Self.otherClientID])
    }

    deinit { server.stop() }

    /// One RSA key for all test servers (generating 2048-bit keys per test is slow in debug builds).
    static let sharedSigner = Result { try SandboxSigningKey.generate(bits: 2048) }

    var model: SandboxModel { server.model }

    /// The sandbox clock's instant, seconds since 1970.
    var now: Double { clock.now.timeIntervalSince1970 }

    /// A client secret; every part can be overridden to build a bad one.
    func secret(iss: String = teamID, kid: String? = keyID, alg: String = "ES256",
                aud: String = "https://appleid.apple.com", sub: String = clientID,
                iat: Double? = nil, exp: Double? = nil, der: Bool = false,
                signingKey: P256PrivateKey? = nil) throws -> String {
        let now = self.now
        var header: [String: any Sendable] = ["alg": alg]
        if let kid { header["kid"] = kid }
        let payload: [String: any Sendable] = ["iss": iss, "aud": aud, "sub": sub,
                                               "iat": Int(iat ?? now - 5), "exp": Int(exp ?? now + 600)]
        let signer = signingKey ?? key
        return try JWS.compact(header: header, payload: payload) { input throws(CryptoError) in
            let raw = try signer.signES256(input)
            if der, let encoded = ECDSASignature.derFromRaw(raw) { return encoded }
            return raw
        }
    }

    func post(_ path: String, _ fields: [(String, String)],
              contentType: String = "application/x-www-form-urlencoded") throws -> HTTPReply {
        try RawHTTP.request(port: port, method: "POST", path: path, headers: [("Content-Type", contentType)],
                            body: RawHTTP.form(fields))
    }

    func postJSON(_ path: String, _ json: String) throws -> HTTPReply {
        try RawHTTP.request(port: port, method: "POST", path: path, headers: [("Content-Type", "application/json")],
                            body: Array(json.utf8))
    }

    func get(_ path: String) throws -> HTTPReply {
        try RawHTTP.request(port: port, method: "GET", path: path)
    }

    /// `grant_type=refresh_token` with a valid secret unless one is given.
    func refresh(_ token: String, clientID: String = clientID, secret: String? = nil) throws -> HTTPReply {
        try post("/auth/token", [("client_id", clientID), ("client_secret", secret ?? self.secret(sub: clientID)),
                                 ("grant_type", "refresh_token"), ("refresh_token", token)])
    }

    func revoke(_ token: String, hint: String = "refresh_token") throws -> HTTPReply {
        try post("/auth/revoke", [("client_id", Self.clientID), ("client_secret", secret()),
                                  ("token", token), ("token_type_hint", hint)])
    }

    func registerToken(_ token: String, clientID: String = clientID, sub: String = "000123.abc.0456",
                       revoked: Bool = false) {
        model.registerRefreshTokens([SandboxRefreshToken(token: token, teamID: Self.teamID, clientID: clientID,
                                                         sub: sub, revoked: revoked)])
    }

    func json(_ reply: HTTPReply) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(reply.body))) as? [String: Any]
    }
}

struct TestDecodeError: Error {}

/// Base64url-decodes a JSON string value.
func b64(_ value: Any?) throws -> [UInt8] {
    guard let text = value as? String, let bytes = Base64URL.decode(text) else { throw TestDecodeError() }
    return bytes
}

/// Parses a JSON object.
func object(_ bytes: [UInt8]) throws -> [String: Any] {
    guard let o = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else { throw TestDecodeError() }
    return o
}
