import Foundation
import SIWACrypto
import Synchronization
import SIWACore

/// The sandbox's RS256 signing keys and the JWKS it publishes at `/auth/keys` (apple-api.md §6).
///
/// One key signs (the newest); `rotate` adds a new signing key and keeps publishing the previous
/// ones, as Apple does while tokens signed with them may still be in flight; `retire` stops
/// publishing every key but the signing one. id_tokens and notifications are signed with the
/// current key and carry its `kid`. A key rotated in with `publish: false` signs before it is in
/// `/auth/keys` (a JWKS copy that lags the signer) until `publish()`.
final class SigningKeySet: Sendable {
    private struct State {
        var current: any RS256Signing
        var currentPublished = true
        var previous: [any RS256Signing] = []
        var jwks: String = ""
        var rotations = 0

        /// The keys in `/auth/keys`, newest first.
        var published: [any RS256Signing] { (currentPublished ? [current] : []) + previous }
    }
    private let state: Mutex<State>

    init(_ signer: any RS256Signing) {
        var s = State(current: signer)
        s.jwks = Self.document([signer])
        state = Mutex(s)
    }

    /// `{"keys":[...]}`, newest key first.
    var jwks: String { state.withLock { $0.jwks } }

    /// Key ids published now, newest first.
    var publishedKIDs: [String] { state.withLock { $0.published.map(\.keyID) } }

    var currentKID: String { state.withLock { $0.current.keyID } }

    /// Modulus size of the signing key, bytes.
    var modulusBytes: Int { state.withLock { $0.current.modulus.count } }

    /// Rotations since start.
    var rotations: Int { state.withLock { $0.rotations } }

    /// Makes `next` the signing key; the previous keys stay published until `retire()` (a previous
    /// key that was not yet published is published now). With `publish: false`, `next` signs but
    /// is left out of the JWKS until `publish()`.
    func rotate(to next: any RS256Signing, publish: Bool = true) {
        state.withLock { s in
            s.previous.insert(s.current, at: 0)
            s.current = next
            s.currentPublished = publish
            s.rotations += 1
            s.jwks = Self.document(s.published)
        }
    }

    /// Publishes the signing key if it was rotated in unpublished.
    func publish() {
        state.withLock { s in
            s.currentPublished = true
            s.jwks = Self.document(s.published)
        }
    }

    /// Stops publishing every key but the signing one. Returns the key ids removed.
    @discardableResult
    func retire() -> [String] {
        state.withLock { s in
            let removed = s.previous.map(\.keyID)
            s.previous = []
            s.jwks = Self.document(s.published)
            return removed
        }
    }

    /// A compact RS256 JWS over `claimsJSON` (a JSON object text) with header
    /// `{"kid":<current>,"alg":"RS256"}`.
    func sign(claimsJSON: String) throws -> String {
        try signed(claimsJSON: claimsJSON).token
    }

    /// `sign(claimsJSON:)`, and the `kid` of the key that signed.
    func signed(claimsJSON: String) throws -> (token: String, kid: String) {
        let signer = state.withLock { $0.current }
        let header = Base64URL.encode(Array("{\"kid\":\(JSONText.quote(signer.keyID)),\"alg\":\"RS256\"}".utf8))
        let input = header + "." + Base64URL.encode(Array(claimsJSON.utf8))
        let signature = try signer.signRS256(Array(input.utf8))
        return (input + "." + Base64URL.encode(signature), signer.keyID)
    }

    private static func document(_ keys: [any RS256Signing]) -> String {
        let entries = keys.map { key in
            "{\"kty\":\"RSA\",\"kid\":\(JSONText.quote(key.keyID)),\"use\":\"sig\",\"alg\":\"RS256\","
                + "\"n\":\"\(Base64URL.encode(key.modulus))\",\"e\":\"\(Base64URL.encode(key.exponent))\"}"
        }
        return "{\"keys\":[\(entries.joined(separator: ","))]}"
    }
}
