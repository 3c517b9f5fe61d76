import SIWACrypto

/// Random token text in Apple's shapes (opaque to clients).
enum TokenMint {
    static func hex(_ count: Int) -> String { Hex.encode(SecureRandom.bytes(count)) }

    /// Like Apple's `adg61...67Or9` access tokens: `a<32 hex>.0.sbx.<16 hex>`.
    static func accessToken() -> String { "a" + hex(16) + ".0.sbx." + hex(8) }
}
