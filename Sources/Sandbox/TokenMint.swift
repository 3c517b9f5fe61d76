import SIWACrypto

/// Random token text in Apple's shapes (opaque to clients).
enum TokenMint {
    static func hex(_ count: Int) -> String { Hex.encode(SecureRandom.bytes(count)) }

    /// Like Apple's `adg61...67Or9` access tokens: `a<32 hex>.0.sbx.<16 hex>`.
    static func accessToken() -> String {
        let random = SecureRandom.bytes(24)   // one draw for both parts
        return "a" + Hex.encode(random[..<16]) + ".0.sbx." + Hex.encode(random[16...])
    }
}
