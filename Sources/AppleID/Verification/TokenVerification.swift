import Clocks
import Foundation
import SIWACore

/// Checks one identity token or notification JWT against a JWKS, for `siwa-jobs token verify`
/// (ops debugging; issue 4 §5). Returns a verdict on the token, or throws when nothing could be
/// verified; the CLI decides the exit status. Neither the outcome nor the error contains the token.
public enum TokenVerification {
    /// A verdict on the token.
    public enum Outcome: Sendable, Equatable {
        /// The token verified; `json` is its normalised claims (`VerifiedClaims` encoding) as
        /// pretty JSON with sorted keys.
        case verified(json: String)
        /// The token was refused for `error.reason` (`JWTVerificationError.Reason`).
        case rejected(JWTVerificationError)

        /// The claims JSON, or `rejected: <reason>: <detail>`, e.g.
        /// `rejected: expired: exp 1700000000 is ...`.
        public var text: String {
            switch self {
            case .verified(let json): json
            case .rejected(let error): "rejected: \(error.reason.rawValue): \(error.detail)"
            }
        }
    }

    /// Nothing was verified: the input or the JWKS was unusable.
    public struct Failure: Error, CustomStringConvertible, Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            /// No accepted audience was given (`clientIDs` is empty or blank).
            case noClientID
            /// The JWKS file the operator named cannot be read.
            case jwksFileUnreadable
            /// The JWKS file is not a usable JWKS (bad JSON, no RSA key, too large).
            case jwksFileInvalid
            /// A JWKS from anywhere else (a URL) could not be fetched or used.
            case jwksUnavailable
            /// The verified claims could not be encoded (a bug).
            case encoding
        }

        public let kind: Kind
        /// What went wrong, e.g. `JWKS file: cannot read /etc/keys.json`.
        public let message: String

        public init(_ kind: Kind, _ message: String) {
            self.kind = kind
            self.message = message
        }

        public var description: String { message }
    }

    /// - Parameters:
    ///   - token: the compact JWT (whitespace around it is ignored).
    ///   - jwks: where the JWKS comes from (`FileJWKSProvider`, `HTTPJWKSProvider`).
    ///   - clientIDs: accepted `aud` values.
    ///   - at: verification time (default: `clock.now`), e.g. to check a captured token.
    ///   - expectedNonce: raw nonce to require (see `JWTVerifier.nonceMatches`).
    /// - Throws: `Failure` when nothing could be verified.
    public static func run(token: String, jwks: any JWKSProvider, clientIDs: [String], at: Date?,
                           expectedNonce: String?, clock: any WallClock = SystemClock()) async throws(Failure) -> Outcome {
        let cache = JWKSCache(provider: jwks, clock: clock)
        let verifier: JWTVerifier
        do {
            verifier = try JWTVerifier(keys: cache, clientIDs: clientIDs, clock: clock)
        } catch {
            throw Failure(.noClientID, "\(error)")
        }
        do {
            try await cache.refresh()
        } catch {
            throw Failure(jwksFailureKind(jwks), "\(error)")
        }
        let claims: VerifiedClaims
        do {
            claims = try await verifier.verify(token, at: at ?? clock.now, expectedNonce: expectedNonce)
        } catch {
            return .rejected(error)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(claims) else {
            throw Failure(.encoding, "could not encode the verified claims")
        }
        return .verified(json: String(decoding: data, as: UTF8.self))
    }

    /// A file the operator named is missing or malformed input; a fetched JWKS is a service problem.
    static func jwksFailureKind(_ jwks: any JWKSProvider) -> Failure.Kind {
        guard let file = jwks as? FileJWKSProvider else { return .jwksUnavailable }
        guard let readable = try? InputFile.open(file.path) else { return .jwksFileUnreadable }   // e.g. a directory
        readable.close()
        return .jwksFileInvalid
    }
}
