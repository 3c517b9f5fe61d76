#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one definition of "loopback" for every plain-http rule (the Apple base URL, `--jwks`,
/// libcurl's protocol and proxy limits): a parsed IP address in 127.0.0.0/8 or `::1`.
///
/// Names never count, not even `localhost` (a resolver or `/etc/hosts` decides where a name
/// goes), and neither does a name that merely starts with `127.` (`127.evil.example.com`).
/// IPv4 must be a full dotted quad (`inet_pton(AF_INET)`, so `127.1` is not one); IPv6 may be
/// written in brackets, as in a URL authority (RFC 3986 §3.2.2).
public enum Loopback {
    /// True for an IP address literal in 127.0.0.0/8, or `::1` (`[::1]` too).
    public static func isLoopback(host: String) -> Bool {
        var name = host
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
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

    /// The lower-cased scheme and host of an absolute URL (`scheme://[user@]host[:port]/...`),
    /// the host without IPv6 brackets; nil when the text has no `://` or no host.
    public static func schemeAndHost(of url: String) -> (scheme: String, host: String)? {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return nil }
        let scheme = url[..<colon].lowercased()
        let authority = url[url.index(colon, offsetBy: 3)...].prefix { !"/?#".contains($0) }
        let afterUser = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? authority
        let host: Substring
        if afterUser.hasPrefix("[") {
            guard let close = afterUser.firstIndex(of: "]") else { return nil }
            host = afterUser[afterUser.index(after: afterUser.startIndex)..<close]
        } else {
            host = afterUser.prefix { $0 != ":" }
        }
        guard !scheme.isEmpty, !host.isEmpty else { return nil }
        return (scheme, host.lowercased())
    }

    /// `url` with any `user[:password]@` of its authority replaced by `***@`, for messages: a
    /// password in a URL never reaches a log or an error.
    /// Broad on purpose: everything between `://` (or the start) and the last `@` is replaced,
    /// so a password holding `/`, `?` or `#` (a URL that does not even parse) is hidden too.
    public static func redactingUserInfo(_ url: String) -> String {
        guard let at = url.lastIndex(of: "@") else { return url }
        var start = url.startIndex
        if let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") { start = url.index(colon, offsetBy: 3) }
        guard start <= at else { return "***" + String(url[at...]) }   // an @ before any ://: hide all before it
        return String(url[..<start]) + "***" + String(url[at...])
    }

    /// True when `url` may be fetched: `https://` to any host, or `http://` to a loopback host.
    public static func allowsPlainOrSecure(_ url: String) -> Bool {
        guard let (scheme, host) = schemeAndHost(of: url) else { return false }
        return scheme == "https" || (scheme == "http" && isLoopback(host: host))
    }
}
