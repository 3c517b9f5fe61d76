import Foundation
import SIWACore

/// A source of Apple's JWKS document (raw JSON bytes, `{"keys":[…]}`), fetched on demand by
/// `JWKSCache`. On failure the cache keeps its last good set and records the error.
public protocol JWKSProvider: Sendable {
    /// The current JWKS document as raw JSON bytes.
    /// - Throws: `JWKSError` (field `fetch` or `file`) when no document could be had.
    func fetch() async throws(JWKSError) -> [UInt8]
}

/// Reads the JWKS from a file on every fetch (for `token verify --jwks FILE` and tests).
public struct FileJWKSProvider: JWKSProvider {
    public let path: String

    public init(path: String) { self.path = path }

    /// - Throws: `JWKSError` field `file` if the file cannot be read (with the reason: no such
    ///   file, a directory, permission denied) or exceeds `JWKSet.maxDocumentBytes`.
    public func fetch() async throws(JWKSError) -> [UInt8] {
        let data: [UInt8]
        do {
            // Read no further than the limit: a wrong file (/dev/zero, a disk image) is refused, not
            // read until memory runs out.
            data = try InputFile.read(path, limit: JWKSet.maxDocumentBytes)
        } catch {
            if case .tooLarge = error.reason {
                throw JWKSError(field: "file", message: "\(PrintableText.quotedPath(path)) is larger than \(JWKSet.maxDocumentBytes) bytes, "
                    + "the limit")
            }
            throw JWKSError(field: "file", message: "cannot read \(PrintableText.quotedPath(path)): \(error.reasonText)")
        }
        return data
    }
}

/// Fetches the JWKS over HTTP through an injected closure, e.g. one that calls
/// `GET https://appleid.apple.com/auth/keys` with the app's HTTP transport and returns the body.
public struct HTTPJWKSProvider: JWKSProvider {
    private let get: @Sendable () async throws(JWKSError) -> [UInt8]

    /// - Parameter fetch: returns the response body of a successful JWKS request and throws
    ///   `JWKSError` (field `fetch`) on any transport error or non-2xx status.
    public init(fetch: @escaping @Sendable () async throws(JWKSError) -> [UInt8]) {
        self.get = fetch
    }

    public func fetch() async throws(JWKSError) -> [UInt8] { try await get() }
}

/// Serves fixed JWKS bytes (tests and the sandbox's own key set).
public struct StaticJWKSProvider: JWKSProvider {
    public let document: [UInt8]

    public init(document: [UInt8]) { self.document = document }

    public func fetch() async throws(JWKSError) -> [UInt8] { document }
}
