import SIWACrypto

/// A parsed JSON Web Key Set (RFC 7517 §5) as served by `GET https://appleid.apple.com/auth/keys`:
/// `{"keys":[{"kty":"RSA","kid":"fh6Bs8C","use":"sig","alg":"RS256","n":"…","e":"AQAB"}, …]}`.
///
/// Only RSA signing keys usable for RS256 are kept, selected later by `kid`:
/// - keys whose `kty` is not `RSA` are ignored silently (RFC 7517 §5 allows mixed sets);
/// - an RSA key is skipped, with the reason recorded in `skipped`, when its `kid` is missing or
///   repeats an earlier one, `use` is present and not `sig`, `alg` is present and not `RS256`, or
///   `n`/`e` are not base64url or do not form a usable key (< 2048 bits);
/// - `kid` length is not validated (Apple documents 10 characters; real kids are 6–7).
public struct JWKSet: Sendable {
    /// Largest JWKS document accepted, in bytes (256 KiB; Apple's is about 1.5 KiB).
    public static let maxDocumentBytes = 256 * 1024

    /// Usable key ids, in document order.
    public let kids: [String]
    /// One line per skipped RSA key, e.g. `keys[1] (kid "abc"): alg "RS512" is not RS256`.
    public let skipped: [String]
    private let keysByKID: [String: RSAPublicKey]

    /// The key with this `kid`, or nil.
    public func key(kid: String) -> RSAPublicKey? { keysByKID[kid] }

    /// Parses a JWKS document.
    /// - Throws: `JWKSError` with field `json` (too large, not JSON, not an object), `keys`
    ///   (missing, not an array, or no usable RSA key left: the message lists why each was skipped).
    public static func parse(_ bytes: [UInt8]) throws(JWKSError) -> JWKSet {
        guard bytes.count <= maxDocumentBytes else {
            throw JWKSError(field: "json", message: "document is \(bytes.count) bytes; the limit is \(maxDocumentBytes)")
        }
        guard let root = JSONValue.object(from: bytes) else {
            throw JWKSError(field: "json", message: "not a JSON object")
        }
        guard let keysValue = root["keys"] else {
            throw JWKSError(field: "keys", message: "missing")
        }
        guard case .array(let entries) = keysValue else {
            throw JWKSError(field: "keys", message: "expected an array, got \(keysValue.kind)")
        }
        var kids: [String] = []
        var skipped: [String] = []
        var byKID: [String: RSAPublicKey] = [:]
        for (index, entry) in entries.enumerated() {
            switch parseKey(entry, index: index, known: byKID) {
            case .ignored:
                continue
            case .skipped(let why):
                skipped.append(why)
            case .key(let kid, let key):
                kids.append(kid)
                byKID[kid] = key
            }
        }
        guard !kids.isEmpty else {
            let why = skipped.isEmpty ? "" : " (" + skipped.prefix(3).joined(separator: "; ") + ")"
            throw JWKSError(field: "keys", message: "no usable RSA signing key among \(entries.count)\(why)")
        }
        return JWKSet(kids: kids, skipped: skipped, keysByKID: byKID)
    }

    private enum Entry {
        case ignored
        case skipped(String)
        case key(String, RSAPublicKey)
    }

    private static func parseKey(_ entry: JSONValue, index: Int, known: [String: RSAPublicKey]) -> Entry {
        guard case .object(let fields) = entry else {
            return .skipped("keys[\(index)]: expected an object, got \(entry.kind)")
        }
        guard case .string("RSA")? = fields["kty"] else { return .ignored }
        guard case .string(let kid)? = fields["kid"], !kid.isEmpty else {
            return .skipped("keys[\(index)]: kid missing or not a string")
        }
        let label = "keys[\(index)] (kid \(JWTVerificationError.quote(kid)))"
        if known[kid] != nil {
            return .skipped("\(label): duplicate kid; the first one is kept")
        }
        if let use = fields["use"], use != .string("sig") {
            return .skipped("\(label): use is not \"sig\"")
        }
        if let alg = fields["alg"], alg != .string("RS256") {
            return .skipped("\(label): alg is not \"RS256\"")
        }
        guard case .string(let nText)? = fields["n"], let n = Base64URL.decode(nText) else {
            return .skipped("\(label): n missing or not base64url")
        }
        guard case .string(let eText)? = fields["e"], let e = Base64URL.decode(eText) else {
            return .skipped("\(label): e missing or not base64url")
        }
        do {
            return .key(kid, try RSAPublicKey(n: n, e: e))
        } catch {
            return .skipped("\(label): \(error.message)")
        }
    }
}
