import AppleID
import SIWACore

/// HTTPS trust: `SIWA_CA_FILE` (or `work --ca-file`) names a PEM file of CA certificates trusted
/// IN ADDITION to the system store, for a private CA (a TLS-intercepting egress proxy, the
/// sandbox's throwaway CA). Certificate verification itself can never be turned off.
extension SIWAConfiguration {
    /// The variable naming the extra CA file.
    public static let caFileVariable = "SIWA_CA_FILE"

    /// `SIWA_CA_FILE`, checked: a readable file (at most 4 MiB) holding at least one PEM
    /// `CERTIFICATE` block; nil when unset.
    /// - Throws: `ConfigurationError` naming `SIWA_CA_FILE` and the reason (missing, a
    ///   directory, permission denied, no certificate in it).
    public func caFile() throws(ConfigurationError) -> String? {
        guard let path = value(Self.caFileVariable) else { return nil }
        let bytes: [UInt8]
        do {
            bytes = try InputFile.read(path, limit: 4 << 20)
        } catch {
            throw ConfigurationError("\(error)", setting: Self.caFileVariable)
        }
        guard String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
            throw ConfigurationError("\(PrintableText.quotedPath(path)) holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                                     setting: Self.caFileVariable)
        }
        return path
    }

    /// The process's HTTP transport, trusting `SIWA_CA_FILE` besides the system store.
    /// - Parameters:
    ///   - maxConnectionsPerHost: as `CurlTransport` (default 512).
    ///   - httpVersion: as `CurlTransport` (default `HTTPVersion.default`; `appleHTTPVersion()` for Apple).
    /// - Throws: `ConfigurationError` from `caFile()`.
    public func httpTransport(maxConnectionsPerHost: Int = 512, httpVersion: HTTPVersion = .default) throws(ConfigurationError) -> CurlTransport {
        CurlTransport(maxConnectionsPerHost: maxConnectionsPerHost, httpVersion: httpVersion, caBundlePath: try caFile())
    }
}

extension AppleIDError {
    /// For a refused TLS certificate (`isCertificateFailure`), the reason a job is paused with:
    /// the cause, and what to fix (`SIWA_CA_FILE`, or the server's certificate), then resume.
    /// nil for every other error.
    /// - Parameter what: the call, as the reason names it (e.g. `Apple for client 'com.example.app'`).
    func certificatePauseReason(calling what: String) -> String? {
        guard isCertificateFailure else { return nil }
        return "TLS certificate refused while calling \(what): \(detail). Nothing was sent and no attempt was charged. "
            + "Trust the server's CA with SIWA_CA_FILE (in addition to the system store; verification cannot be turned off), "
            + "or fix the server's certificate; then resume the job"
    }
}
