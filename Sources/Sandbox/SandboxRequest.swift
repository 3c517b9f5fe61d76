import Foundation
import SIWACrypto

/// One fully received HTTP request, as the endpoint handlers see it.
struct SandboxRequest {
    var method: String
    /// Path without the query string, e.g. `/auth/token`.
    var path: String
    var contentType: String?
    var authorization: String?
    var body: [UInt8]
    /// Looks up one query-string parameter; only valid while the request is being handled.
    var query: (String) -> String?

    /// True for `application/x-www-form-urlencoded`, with or without parameters such as `charset`.
    var isFormEncoded: Bool {
        guard let contentType else { return false }
        let media = contentType.split(separator: ";", maxSplits: 1).first.map {
            $0.trimmingCharacters(in: .whitespaces)
        } ?? ""
        return media.lowercased() == "application/x-www-form-urlencoded"
    }
}

/// Random token text in Apple's shapes (opaque to clients).
enum TokenMint {
    static func hex(_ count: Int) -> String { Hex.encode(SecureRandom.bytes(count)) }

    /// Like Apple's `adg61...67Or9` access tokens: `a<32 hex>.0.sbx.<16 hex>`.
    static func accessToken() -> String { "a" + hex(16) + ".0.sbx." + hex(8) }
}
