import SIWACrypto

/// A compact JWS taken apart by `JWTVerifier` (RFC 7515 §7.1), with the header already checked:
/// size limits, base64url, JSON object, `alg` == `RS256`, no `crit`, string `kid`.
/// The header is read before the payload and signature are decoded, so an `alg: none` token
/// (empty third segment) is reported as `algNotAllowed`, not as a malformed signature.
struct JWTParts {
    let kid: String
    let payload: [UInt8]
    /// `b64url(header) "." b64url(payload)`, the bytes the signature covers.
    let signingInput: [UInt8]
    let signature: [UInt8]

    /// - Throws: `JWTVerificationError` `.malformed` or `.algNotAllowed`.
    init(_ token: String) throws(JWTVerificationError) {
        let bytes = Array(token.utf8)
        guard !bytes.isEmpty else { throw JWTVerificationError(.malformed, "token is empty") }
        guard bytes.count <= JWTVerifier.maxTokenBytes else {
            throw JWTVerificationError(.malformed, "token is \(bytes.count) bytes; the limit is \(JWTVerifier.maxTokenBytes)")
        }
        let segments = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3 else {
            throw JWTVerificationError(.malformed, "expected 3 dot-separated segments, got \(segments.count)")
        }
        let headerSegment = segments[0]
        guard headerSegment.count <= JWTVerifier.maxHeaderBytes else {
            throw JWTVerificationError(.malformed, "header is \(headerSegment.count) bytes encoded; the limit is \(JWTVerifier.maxHeaderBytes)")
        }
        let header = try Self.decodeSegment(headerSegment, name: "header")
        guard let fields = JSONValue.object(from: header) else {
            throw JWTVerificationError(.malformed, "header is not a JSON object")
        }
        switch fields["alg"] {
        case .string("RS256")?:
            break
        case .string(let alg)?:
            throw JWTVerificationError(.algNotAllowed, "alg \(JWTVerificationError.quote(alg)) is not allowed; only RS256 is accepted")
        case nil:
            throw JWTVerificationError(.algNotAllowed, "alg is missing; only RS256 is accepted")
        case let other?:
            throw JWTVerificationError(.algNotAllowed, "alg is \(other.kind), not a string; only RS256 is accepted")
        }
        guard fields["crit"] == nil else {
            throw JWTVerificationError(.malformed, "header crit: critical extensions are not supported")
        }
        guard case .string(let kid)? = fields["kid"], !kid.isEmpty else {
            throw JWTVerificationError(.malformed, "header kid: missing or not a string")
        }
        self.kid = kid
        self.payload = try Self.decodeSegment(segments[1], name: "payload")
        self.signature = try Self.decodeSegment(segments[2], name: "signature")
        self.signingInput = Array(bytes[..<(headerSegment.count + 1 + segments[1].count)])
    }

    private static func decodeSegment(_ segment: ArraySlice<UInt8>, name: String) throws(JWTVerificationError) -> [UInt8] {
        guard !segment.isEmpty else { throw JWTVerificationError(.malformed, "\(name) segment is empty") }
        guard !segment.contains(UInt8(ascii: "=")),
              let decoded = Base64URL.decode(String(decoding: segment, as: UTF8.self)) else {
            throw JWTVerificationError(.malformed, "\(name) segment is not unpadded base64url")
        }
        return decoded
    }
}
