import CCurl
import SIWACore

extension CurlEngine {
    /// What was wrong with the server's certificate (or with the CA file), for a transfer that
    /// failed with a certificate code (`kind(of:) == .certificate`), in words an operator can act
    /// on: `the server's certificate for HOST <cause> (X.509 error N; curl error C: detail)`.
    ///
    /// The cause comes from OpenSSL's chain verification result (`CURLINFO_SSL_VERIFYRESULT`,
    /// X509_V_ERR_* of openssl/x509_vfy.h) and libcurl's detailed error text
    /// (`CURLOPT_ERRORBUFFER`), which names a host name mismatch (libcurl's own RFC 6125 check
    /// against the subjectAltName). Neither carries anything secret.
    func certificateProblem(_ code: CURLcode, easy: UnsafeMutableRawPointer, url: String) -> String {
        let detail = errorText(of: easy).map { "curl error \(code.rawValue): \($0)" } ?? Self.describe(code)
        let host = Loopback.schemeAndHost(of: url)?.host ?? "the server"
        if code == CURLE_SSL_CACERT_BADFILE || code == CURLE_SSL_CRL_BADFILE {
            return "the trusted CA file or directory could not be read or holds no usable certificate (\(detail))"
        }
        if code == CURLE_SSL_CERTPROBLEM {
            return "the client certificate could not be used (\(detail))"
        }
        var result = 0
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_SSL_VERIFYRESULT, &result)
        let text = detail.lowercased()
        let cause: String
        if result == 62 || result == 64 || text.contains("subject name") || text.contains("does not match target host") {
            cause = "does not name the host \(host) (its subjectAltName lists other names): wrong host name"
        } else if result == 10 || text.contains("expired") {
            cause = "has expired (its notAfter is in the past)"
        } else if result == 9 || text.contains("not yet valid") {
            cause = "is not valid yet (its notBefore is in the future; check the clock)"
        } else if [2, 18, 19, 20, 21].contains(result) || text.contains("issuer") || text.contains("self-signed")
                    || text.contains("self signed") {
            cause = "is not trusted: it does not chain to a trusted CA (the system store, plus the extra CA file when one is set)"
        } else {
            cause = "failed verification"
        }
        return "the server's certificate for \(host) \(cause) (X.509 error \(result); \(detail))"
    }
}
