#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a JWKS given by an operator comes from (`token verify --jwks`): a file, or a URL.
///
/// A URL must be `https://` unless its host is loopback, exactly: an IPv4 address in
/// 127.0.0.0/8 written as a dotted quad, the IPv6 address `::1` (in brackets), or the name
/// `localhost`. Plain `http://` to any other host would let anyone on the path serve the keys
/// that decide what verifies. A host that merely starts with `127.` (`127.0.0.1.example.com`)
/// is not loopback. Schemes are matched case-insensitively (RFC 3986 §3.1).
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
        let secure = lower.hasPrefix("https://")
        guard secure || lower.hasPrefix("http://") else { return .file(path: text) }
        let rest = text.dropFirst(secure ? 8 : 7)
        guard let host = host(ofAuthority: String(rest.prefix { !"/?#".contains($0) })), !host.isEmpty else {
            throw Refusal(description: "--jwks: the URL has no host")
        }
        guard secure || isLoopback(host: host) else {
            throw Refusal(description: "--jwks: plain http is refused for host '\(host.prefix(80))': use https, or http only "
                + "to a loopback host (127.0.0.0/8, [::1], localhost)")
        }
        return .url(text)
    }

    /// The host of a URL authority (`user@host:port`, `[v6]:port`), lower-cased, without brackets.
    static func host(ofAuthority authority: String) -> String? {
        let afterUser = authority.split(separator: "@", omittingEmptySubsequences: false).last.map(String.init) ?? authority
        if afterUser.hasPrefix("[") {
            guard let close = afterUser.firstIndex(of: "]") else { return nil }
            return String(afterUser[afterUser.index(after: afterUser.startIndex)..<close]).lowercased()
        }
        return String(afterUser.prefix { $0 != ":" }).lowercased()
    }

    /// True for `localhost`, a dotted-quad IPv4 address in 127.0.0.0/8, and `::1`.
    public static func isLoopback(host: String) -> Bool {
        let name = host.lowercased()
        if name == "localhost" || name == "localhost." { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { $0[0] == 127 }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, name, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { bytes in bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1 }
        }
        return false
    }
}
