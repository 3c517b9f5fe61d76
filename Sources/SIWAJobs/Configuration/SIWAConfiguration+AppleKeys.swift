import AppleID
import SIWACore

/// Where the keys that verify Apple's own tokens (server-to-server notifications, identity
/// tokens) come from: Apple's JWKS URL, pinned, whatever `SIWA_APPLE_BASE_URL` says, unless the
/// explicit sandbox mode `SIWA_SANDBOX_MODE=1` lets them follow the base URL (the local sandbox,
/// which signs anything its unauthenticated admin API is asked to). A base URL that is not
/// Apple's is warned about at start-up and by `doctor` (`appleBaseURLWarning`).
extension SIWAConfiguration {
    /// Apple's base URL, the default of `SIWA_APPLE_BASE_URL`.
    public static let appleProductionBaseURL = "https://appleid.apple.com"
    /// Apple's JWKS (apple-api.md §6), used unless `sandboxMode`.
    public static let appleKeysURL = appleProductionBaseURL + "/auth/keys"
    /// The variable that lets verification keys follow `SIWA_APPLE_BASE_URL`.
    public static let sandboxModeVariable = "SIWA_SANDBOX_MODE"

    /// True when `SIWA_SANDBOX_MODE` is `1`, `true` or `yes`.
    public var sandboxMode: Bool { ["1", "true", "yes"].contains(value(Self.sandboxModeVariable)?.lowercased() ?? "") }

    /// True when `SIWA_APPLE_BASE_URL` is Apple's own (`https://appleid.apple.com`, any case, with
    /// or without a trailing slash).
    public var isAppleProductionBaseURL: Bool {
        var url = appleBaseURL.lowercased()
        while url.hasSuffix("/") { url.removeLast() }
        return url == Self.appleProductionBaseURL
    }

    /// The JWKS URL that notifications (and identity tokens) are verified with.
    public var verificationKeysURL: String { sandboxMode ? appleBaseURL + "/auth/keys" : Self.appleKeysURL }

    /// What start-up and `doctor` warn about the base URL; nil for Apple's.
    public var appleBaseURLWarning: String? {
        guard !isAppleProductionBaseURL else { return nil }
        return "SIWA_APPLE_BASE_URL '\(String(Loopback.redactingUserInfo(appleBaseURL).prefix(120)))' is not Apple's (\(Self.appleProductionBaseURL)): "
            + (sandboxMode
                ? "SIWA_SANDBOX_MODE is set, so Apple's signed tokens are verified with keys from that URL too"
                : "Apple's signed tokens are still verified with Apple's keys (\(Self.appleKeysURL)); set SIWA_SANDBOX_MODE=1 "
                    + "only for a local sandbox")
    }

    /// The JWKS source for `verificationKeysURL`: the Apple client's own `GET /auth/keys` in
    /// sandbox mode, else Apple's URL through `transport`.
    public func verificationKeysProvider(client: AppleIDClient, transport: any HTTPTransport) -> HTTPJWKSProvider {
        sandboxMode ? JWKSProviders.apple(client) : JWKSProviders.url(Self.appleKeysURL, transport: transport)
    }
}
