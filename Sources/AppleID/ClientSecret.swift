import Clocks
import Foundation
import SIWACrypto

/// The `client_secret` JWT Apple requires on every call (Apple "Creating a client secret";
/// JWS per RFC 7515, ES256 per RFC 7518 §3.4).
///
/// Header `{"alg":"ES256","kid":keyID}`; claims `{"iss":teamID,"iat","exp",
/// "aud":"https://appleid.apple.com","sub":clientID}`; signature raw 64-byte R‖S.
public struct ClientSecret: Sendable {
    /// Apple's audience claim.
    public static let audience = "https://appleid.apple.com"
    /// Longest lifetime Apple accepts (`exp` at most 15 777 000 s after now).
    public static let maximumLifetime: Duration = .seconds(15_777_000)
    /// Shortest lifetime this code will mint.
    public static let minimumLifetime: Duration = .seconds(60)
    /// How far `iat` is back-dated, so a host clock up to a minute ahead of Apple's does not make
    /// the secret look issued in the future (Apple rejects those with `invalid_client`; apple-api.md
    /// §5 "Set `iat` a few seconds in the past"; public reports show skews of tens of seconds).
    public static let issuedAtBackdate: Duration = .seconds(60)

    /// Mints a signed client secret.
    /// - Parameters:
    ///   - now: current time; `iat = floor(now) - 60`, `exp = floor(now) + lifetime`.
    ///   - lifetime: clamped to 60 s ... 15 777 000 s minus the back-date, whole seconds.
    /// - Returns: the compact JWS and its expiry (`exp`).
    /// - Throws: `CryptoError` if signing (or encoding the JOSE header or claims) fails.
    public static func mint(credentials: AppleCredentials, now: Date, lifetime: Duration = .seconds(3600)) throws(CryptoError) -> (token: String, expiresAt: Date) {
        // exp - iat stays within the maximum too, since iat is back-dated.
        let clamped = min(max(lifetime, minimumLifetime), maximumLifetime - issuedAtBackdate)
        let nowSeconds = Int64(now.timeIntervalSince1970.rounded(.down))
        let claims = Claims(
            iss: credentials.teamID,
            iat: nowSeconds - issuedAtBackdate.components.seconds,
            exp: nowSeconds + clamped.components.seconds,
            aud: audience,
            sub: credentials.clientID
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header: Data, payload: Data
        do {
            header = try encoder.encode(Header(alg: "ES256", kid: credentials.keyID))
            payload = try encoder.encode(claims)
        } catch {
            throw CryptoError(code: "jws.json", message: "the client secret header or claims could not be encoded")
        }
        let token = try JWS.es256(headerJSON: Array(header), payloadJSON: Array(payload), key: credentials.privateKey)
        return (token, Date(timeIntervalSince1970: TimeInterval(claims.exp)))
    }

    struct Header: Codable { let alg: String; let kid: String }

    struct Claims: Codable {
        let iss: String
        let iat: Int64
        let exp: Int64
        let aud: String
        let sub: String
    }
}
