import AppleID
import SIWACore

extension SIWAConfiguration {
    /// The variable choosing the HTTP version toward Apple.
    public static let httpVersionVariable = "SIWA_HTTP_VERSION"

    /// `SIWA_HTTP_VERSION` (`work --http-version` sets it): `1.1` (HTTP/1.1 keep-alive) or `2`
    /// (HTTP/2 multiplexed over TLS); unset: `HTTPVersion.default`. README "HTTP/2 or HTTP/1.1".
    /// - Throws: `ConfigurationError` naming `SIWA_HTTP_VERSION` for any other value.
    public func appleHTTPVersion() throws(ConfigurationError) -> HTTPVersion {
        guard let text = value(Self.httpVersionVariable) else { return .default }
        guard let version = HTTPVersion(parsing: text) else {
            throw ConfigurationError("expected 1.1 or 2, got '\(text)'", setting: Self.httpVersionVariable)
        }
        return version
    }
}
