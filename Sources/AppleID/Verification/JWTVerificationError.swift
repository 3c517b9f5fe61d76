/// Why `JWTVerifier` rejected a token. `reason` is a stable machine-readable code; `detail` is a
/// short human-readable explanation that names the header field or claim at fault. Neither ever
/// contains the token or a signature; header values quoted in `detail` (such as `alg` or `kid`)
/// are cut to 40 printable ASCII characters.
public struct JWTVerificationError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Reason: String, Sendable, Equatable, CaseIterable {
        /// Not a well-formed compact JWS: size limits, segment count, base64url, JSON, claim types.
        case malformed
        /// The header's `alg` is not `RS256` (`none`, `HS256`, `ES256`, ...).
        case algNotAllowed
        /// No key with the header's `kid` in the JWKS, even after the one permitted refetch.
        case unknownKID
        /// The RS256 signature does not verify with the key the `kid` selects.
        case badSignature
        /// `exp` (plus leeway) is not after the verification time.
        case expired
        /// `iat` or `nbf` is later than the verification time plus leeway.
        case notYetValid
        /// `iss` is not `https://appleid.apple.com`.
        case wrongIssuer
        /// No `aud` value is one of the configured client IDs.
        case wrongAudience
        /// A nonce was expected and the `nonce` claim is absent or different.
        case nonceMismatch
    }

    public let reason: Reason
    public let detail: String

    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    /// `<reason>: <detail>`, safe to log.
    public var description: String { "\(reason.rawValue): \(detail)" }

    /// Quotes an untrusted header value for a detail message: printable ASCII only, at most 40
    /// characters, with `…` marking a cut.
    static func quote(_ value: String) -> String {
        let printable = value.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" }
        let cut = printable.count > 40 ? String(printable.prefix(40)) + "…" : String(printable)
        return "\"" + cut + "\""
    }
}
