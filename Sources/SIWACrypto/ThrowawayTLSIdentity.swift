import COpenSSL
import Foundation

/// A throwaway TLS identity for a local HTTPS stand-in (the sandbox): a fresh certificate
/// authority and one server certificate it signed, both X.509 v3 (RFC 5280) with EC P-256 keys
/// and ECDSA-SHA256 signatures.
///
/// - The CA: a name of its own (`siwa-jobs throwaway CA <12 hex>`: two CAs never share a subject,
///   which a hashed CA directory and OpenSSL's issuer lookup key on), `basicConstraints` critical
///   CA:TRUE, `keyUsage` critical keyCertSign + cRLSign,
///   valid from an hour before the server certificate (or now) to a day after it (or now).
/// - The server certificate: `subjectAltName` with the given DNS names and IP addresses (what a
///   client matches the host against, RFC 6125 §6), `extendedKeyUsage` serverAuth, `keyUsage`
///   digitalSignature, signed by the CA.
/// - The CA's private key is dropped once the server certificate is signed: nothing else can
///   ever chain to this CA.
public struct ThrowawayTLSIdentity: Sendable {
    /// The CA certificate, PEM: what a client trusts (`SIWA_CA_FILE`).
    public let caCertificatePEM: String
    /// The server certificate, PEM.
    public let certificatePEM: String
    /// The server certificate's private key, unencrypted PKCS#8 PEM.
    public let privateKeyPEM: String

    /// - Parameters:
    ///   - dnsNames: `subjectAltName` DNS entries (e.g. `localhost`); the first is also the CN.
    ///   - ipAddresses: `subjectAltName` IP entries (e.g. `127.0.0.1`).
    ///   - notBefore: the server certificate's start, seconds since 1970 (UTC).
    ///   - notAfter: its end, seconds since 1970; in the past for an expired certificate.
    /// - Throws: `CryptoError` `keygen.failed`, or `x509.failed` naming the step OpenSSL refused.
    public static func make(dnsNames: [String], ipAddresses: [String], notBefore: Int64,
                            notAfter: Int64) throws(CryptoError) -> ThrowawayTLSIdentity {
        let caKey = try OpenSSL.generate(copenssl_key_type_ec()) { copenssl_ec_paramgen_curve_p256($0) }
        defer { EVP_PKEY_free(caKey) }
        let serverKey = try OpenSSL.generate(copenssl_key_type_ec()) { copenssl_ec_paramgen_curve_p256($0) }
        defer { EVP_PKEY_free(serverKey) }
        let now = Int64(time(nil))
        let ca = try certificate(
            commonName: "siwa-jobs throwaway CA " + SecureRandom.bytes(6).map { String(format: "%02x", $0) }.joined(), key: caKey, issuer: nil, issuerKey: caKey,
            validity: (min(notBefore, now) - 3600, max(notAfter, now) + 86_400),
            extensions: [(NID_basic_constraints, "critical,CA:TRUE"), (NID_key_usage, "critical,keyCertSign,cRLSign"),
                         (NID_subject_key_identifier, "hash")])
        defer { X509_free(ca) }
        let names = dnsNames.map { "DNS:" + $0 } + ipAddresses.map { "IP:" + $0 }
        let server = try certificate(
            commonName: dnsNames.first ?? ipAddresses.first ?? "siwa-jobs sandbox", key: serverKey, issuer: ca, issuerKey: caKey,
            validity: (notBefore, notAfter),
            extensions: [(NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
                         (NID_ext_key_usage, "serverAuth"), (NID_subject_alt_name, names.joined(separator: ",")),
                         (NID_authority_key_identifier, "keyid:always")])
        defer { X509_free(server) }
        guard let caPEM = OpenSSL.writeToString({ PEM_write_bio_X509($0, ca) }),
              let serverPEM = OpenSSL.writeToString({ PEM_write_bio_X509($0, server) }) else {
            throw OpenSSL.failure("x509.failed", "could not write the certificates as PEM")
        }
        return ThrowawayTLSIdentity(caCertificatePEM: caPEM, certificatePEM: serverPEM, privateKeyPEM: OpenSSL.privatePEM(serverKey))
    }

    /// OpenSSL's subject name hash of a PEM certificate, as 8 hex digits: the `HASH.0` file name
    /// under which a hashed CA directory (`c_rehash`, `CURLOPT_CAPATH`) holds it.
    /// - Throws: `CryptoError` `x509.failed` when the text is not a PEM certificate.
    public static func subjectHash(ofCertificatePEM pem: String) throws(CryptoError) -> String {
        guard let cert = OpenSSL.withReadBIO(Array(pem.utf8), { PEM_read_bio_X509($0, nil, nil, nil) }) else {
            throw OpenSSL.failure("x509.failed", "not a PEM certificate")
        }
        defer { X509_free(cert) }
        let hash = String(X509_subject_name_hash(cert), radix: 16)
        return String(repeating: "0", count: max(0, 8 - hash.count)) + hash
    }

    /// A certificate for `key`'s public half, signed by `issuerKey` (self-signed when `issuer` is nil).
    private static func certificate(commonName: String, key: OpaquePointer, issuer: OpaquePointer?, issuerKey: OpaquePointer,
                                    validity: (Int64, Int64), extensions: [(Int32, String)]) throws(CryptoError) -> OpaquePointer {
        OpenSSL.clearErrors()
        guard let cert = X509_new() else { throw OpenSSL.failure("x509.failed", "X509_new failed") }
        var serial = SecureRandom.bytes(16)
        serial[0] &= 0x7f   // a positive INTEGER of at most 20 octets (RFC 5280 §4.1.2.2)
        let name = X509_get_subject_name(cert)
        let cn = Array(commonName.utf8)
        var ok = X509_set_version(cert, 2) == 1   // v3
            && BN_bin2bn(serial, Int32(serial.count), nil).map { bn in
                defer { BN_free(bn) }
                return BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nil
            } == true
            && ASN1_TIME_set(X509_getm_notBefore(cert), time_t(validity.0)) != nil
            && ASN1_TIME_set(X509_getm_notAfter(cert), time_t(validity.1)) != nil
            && X509_set_pubkey(cert, key) == 1
            && X509_NAME_add_entry_by_txt(name, "CN", copenssl_mbstring_asc(), cn, Int32(cn.count), -1, 0) == 1
            && X509_set_issuer_name(cert, issuer.map { X509_get_subject_name($0) } ?? name) == 1
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer ?? cert, cert, nil, nil, 0)
        for (nid, value) in extensions where ok {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else { ok = false; break }
            ok = X509_add_ext(cert, ext, -1) == 1
            X509_EXTENSION_free(ext)
        }
        guard ok, X509_sign(cert, issuerKey, EVP_sha256()) > 0 else {
            X509_free(cert)
            throw OpenSSL.failure("x509.failed", "could not build the certificate '\(commonName)'")
        }
        return cert
    }
}
