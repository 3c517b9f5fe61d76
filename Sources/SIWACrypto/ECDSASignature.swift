import COpenSSL

/// Conversion between ECDSA signature encodings: ASN.1 DER (what OpenSSL produces) and the
/// fixed-width raw R‖S that JWS ES256 requires (RFC 7518 §3.4).
public enum ECDSASignature {
    /// Width in bytes of each of R and S for P-256.
    public static let p256ComponentSize = 32

    /// Converts a DER `ECDSA-Sig-Value` to raw R‖S, each left-padded to `componentSize` bytes.
    /// Returns nil if the DER is malformed or a component is too wide.
    public static func rawFromDER(_ der: [UInt8], componentSize: Int = p256ComponentSize) -> [UInt8]? {
        let sig = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var p = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &p, buffer.count)
        }
        guard let sig else { OpenSSL.clearErrors(); return nil }
        defer { ECDSA_SIG_free(sig) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(sig, &r, &s)
        guard let r, let s,
              BN_num_bits(r) <= componentSize * 8, BN_num_bits(s) <= componentSize * 8 else { return nil }
        var out = [UInt8](repeating: 0, count: componentSize * 2)
        let ok = out.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            return BN_bn2binpad(r, base, Int32(componentSize)) == Int32(componentSize)
                && BN_bn2binpad(s, base + componentSize, Int32(componentSize)) == Int32(componentSize)
        }
        return ok ? out : nil
    }

    /// Converts raw R‖S (even length, both halves equal width) to DER. Returns nil for an odd or
    /// empty input.
    public static func derFromRaw(_ raw: [UInt8]) -> [UInt8]? {
        guard !raw.isEmpty, raw.count % 2 == 0, let sig = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(sig) }
        let half = raw.count / 2
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32(half), nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress.map { $0 + half }, Int32(half), nil) }
        guard let r, let s else {
            if let r { BN_free(r) }
            if let s { BN_free(s) }
            return nil
        }
        guard ECDSA_SIG_set0(sig, r, s) == 1 else {  // takes ownership of r and s on success
            BN_free(r); BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(sig, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var p = buffer.baseAddress
            return i2d_ECDSA_SIG(sig, &p)
        }
        return written == length ? der : nil
    }
}
