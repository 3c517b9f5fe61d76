import Foundation

/// Compact JWS serialization helpers (RFC 7515 §7.1).
public enum JWS {
    /// Largest compact token `split` accepts, in bytes (16 KiB).
    public static let maxTokenBytes = 16 * 1024

    /// Builds `b64url(header) "." b64url(payload) "." b64url(sign(signingInput))`.
    /// - Parameters:
    ///   - headerJSON: the JOSE header as UTF-8 JSON bytes.
    ///   - payloadJSON: the claims (or payload) as UTF-8 JSON bytes.
    ///   - sign: signs the ASCII signing input `b64url(header).b64url(payload)`; for ES256 it must
    ///     return raw R‖S (`P256PrivateKey.signES256` does).
    /// - Throws: whatever `sign` throws.
    public static func compact(
        headerJSON: [UInt8],
        payloadJSON: [UInt8],
        sign: ([UInt8]) throws(CryptoError) -> [UInt8]
    ) throws(CryptoError) -> String {
        let signingInput = Base64URL.encode(headerJSON) + "." + Base64URL.encode(payloadJSON)
        let signature = try sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Same as `compact(headerJSON:payloadJSON:sign:)` but serializes JSON-compatible
    /// dictionaries (String, Int, Double, Bool, arrays, nested dictionaries) with sorted keys and
    /// unescaped slashes.
    /// - Throws: `CryptoError` `jws.json` if a value is not JSON-serializable; or what `sign` throws.
    public static func compact(
        header: [String: any Sendable],
        payload: [String: any Sendable],
        sign: ([UInt8]) throws(CryptoError) -> [UInt8]
    ) throws(CryptoError) -> String {
        try compact(headerJSON: json(header, "header"), payloadJSON: json(payload, "payload"), sign: sign)
    }

    /// Convenience: an ES256 compact JWS signed by `key`.
    public static func es256(headerJSON: [UInt8], payloadJSON: [UInt8], key: P256PrivateKey) throws(CryptoError) -> String {
        try compact(headerJSON: headerJSON, payloadJSON: payloadJSON) { input throws(CryptoError) in
            try key.signES256(input)
        }
    }

    /// Splits and decodes a compact JWS.
    /// - Returns: decoded header and payload bytes, the ASCII signing input (first two segments
    ///   and the dot, as signed), and the decoded signature.
    /// - Throws: `CryptoError` `jws.too_large` (> 16 KiB), `jws.segments` (not exactly three
    ///   non-empty segments), `jws.base64` (a segment is not unpadded base64url).
    public static func split(_ token: String) throws(CryptoError) -> (header: [UInt8], payload: [UInt8], signingInput: [UInt8], signature: [UInt8]) {
        let bytes = Array(token.utf8)
        guard bytes.count <= maxTokenBytes else {
            throw CryptoError(code: "jws.too_large", message: "token is \(bytes.count) bytes; the limit is \(maxTokenBytes)")
        }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else {
            throw CryptoError(code: "jws.segments", message: "a compact JWS has 3 non-empty dot-separated segments (got \(parts.count))")
        }
        var decoded: [[UInt8]] = []
        for (index, part) in parts.enumerated() {
            guard !part.contains(UInt8(ascii: "=")), let value = Base64.decode(part, table: Base64.urlTable) else {
                throw CryptoError(code: "jws.base64", message: "segment \(index + 1) is not unpadded base64url")
            }
            decoded.append(value)
        }
        let signingInput = Array(bytes[..<(parts[0].count + 1 + parts[1].count)])
        return (decoded[0], decoded[1], signingInput, decoded[2])
    }

    private static func json(_ object: [String: any Sendable], _ what: String) throws(CryptoError) -> [UInt8] {
        let untyped = object.mapValues { $0 as Any }
        guard JSONSerialization.isValidJSONObject(untyped),
              let data = try? JSONSerialization.data(withJSONObject: untyped, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            throw CryptoError(code: "jws.json", message: "the JWS \(what) is not JSON-serializable")
        }
        return Array(data)
    }
}
