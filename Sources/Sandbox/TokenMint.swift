import SIWACrypto
import Synchronization

/// Random token text in Apple's shapes (opaque to clients).
enum TokenMint {
    static func hex(_ count: Int) -> String { Hex.encode(SecureRandom.bytes(count)) }

    /// Like Apple's `adg61...67Or9` access tokens: `a<32 hex>.0.sbx.<16 hex>` (57 characters).
    ///
    /// Minted on every refresh answer, so the 24 random bytes come from `RandomPool` (OpenSSL's
    /// generator drawn from 4 KiB at a time, not once per token) and the text is written in place.
    static func accessToken() -> String {
        var random: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &random) { RandomPool.shared.fill($0) }
        return withUnsafeBytes(of: &random) { bytes in
            String(unsafeUninitializedCapacity: 57) { out in
                let digits: StaticString = "0123456789abcdef"
                let hex = digits.utf8Start
                var at = 0
                func put(_ byte: UInt8) {
                    out[at] = byte
                    at += 1
                }
                func putHex(_ range: Range<Int>) {
                    for i in range {
                        put(hex[Int(bytes[i] >> 4)])
                        put(hex[Int(bytes[i] & 0x0F)])
                    }
                }
                put(UInt8(ascii: "a"))
                putHex(0..<16)
                for byte in ".0.sbx.".utf8 { put(byte) }
                putHex(16..<24)
                return at
            }
        }
    }
}

/// Cryptographically random bytes handed out from a buffer that `SecureRandom` (OpenSSL's
/// `RAND_bytes`) refills `chunk` bytes at a time: one generator call (and its fork check and
/// locking) per 4 KiB instead of per token. Bytes are never handed out twice. Thread-safe.
final class RandomPool: Sendable {
    static let shared = RandomPool()

    /// Bytes drawn per refill.
    let chunk: Int
    private struct Buffer {
        var bytes: [UInt8] = []
        var used = 0
    }
    private let buffer = Mutex(Buffer())

    /// - Parameter chunk: bytes drawn per refill (at least 64).
    init(chunk: Int = 4096) {
        self.chunk = max(64, chunk)
    }

    /// Fills `destination` with fresh random bytes.
    func fill(_ destination: UnsafeMutableRawBufferPointer) {
        guard destination.count <= chunk else {
            SecureRandom.bytes(destination.count).withUnsafeBytes { destination.copyMemory(from: $0) }
            return
        }
        buffer.withLock { b in
            if b.bytes.count - b.used < destination.count {
                b.bytes = SecureRandom.bytes(chunk)
                b.used = 0
            }
            b.bytes.withUnsafeBytes { source in
                destination.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[b.used..<(b.used + destination.count)]))
            }
            b.used += destination.count
        }
    }
}
