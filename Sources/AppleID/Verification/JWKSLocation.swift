import SIWACore

/// Where a JWKS given by an operator comes from (`token verify --jwks`): a file, or a URL.
///
/// A URL must be `https://` unless its host is loopback, exactly as `Loopback` defines it: an
/// IPv4 address in 127.0.0.0/8 written as a dotted quad, or the IPv6 address `::1` (in
/// brackets); no name, not even `localhost`. Plain `http://` to any other host would let anyone
/// on the path serve the keys that decide what verifies. A host that merely starts with `127.`
/// (`127.0.0.1.example.com`) is not loopback. Schemes are matched case-insensitively (RFC 3986 §3.1).
public enum JWKSLocation: Sendable, Equatable {
    case file(path: String)
    case url(String)

    /// Why a JWKS location was refused; `description` names `--jwks`.
    public struct Refusal: Error, CustomStringConvertible, Sendable, Equatable {
        public let description: String
    }

    /// - Throws: `Refusal` for an `http://` URL whose host is not loopback, or a URL without a host.
    public static func parse(_ text: String) throws(Refusal) -> JWKSLocation {
        let lower = text.lowercased()
        guard !(text.contains("://") && text.contains("@")) else {
            throw Refusal(description: "--jwks: the URL '\(Loopback.redactingUserInfo(text).prefix(200))' holds a user name or "
                + "password; a JWKS is public, give its URL without them")
        }
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://") else { return .file(path: text) }
        guard let (scheme, host) = Loopback.schemeAndHost(of: text) else {
            throw Refusal(description: "--jwks: the URL has no host")
        }
        guard scheme == "https" || isLoopback(host: host) else {
            throw Refusal(description: "--jwks: plain http is refused for host '\(host.prefix(80))': use https, or http only "
                + "to a loopback address (127.0.0.0/8 or [::1])")
        }
        return .url(text)
    }

    /// True for a dotted-quad IPv4 address in 127.0.0.0/8 and `::1` (see `Loopback`).
    public static func isLoopback(host: String) -> Bool { Loopback.isLoopback(host: host) }
}
