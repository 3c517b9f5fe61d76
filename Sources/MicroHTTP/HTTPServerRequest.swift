import Foundation

/// One fully received HTTP/1.1 request (RFC 9110), as an `HTTPServer` handler sees it.
public struct HTTPServerRequest: Sendable {
    /// The method as sent, e.g. `POST`.
    public var method: String
    /// The path without the query string, e.g. `/auth/token`.
    public var path: String
    /// Every request header field, in the order received; `headers["Content-Type"]` matches any case.
    public var headers: HTTPRequestHeaders
    /// The query-string parameters, percent-decoded, by exact name; when a name repeats, its first
    /// value. A parameter without `=` (`?flag`) has no value and is left out.
    public var query: [String: String]
    /// The body; empty when `bodyTooLarge`.
    public var body: [UInt8]
    /// True when the body was larger than the server's body limit for this path; it was discarded
    /// unread.
    public var bodyTooLarge: Bool
    /// Body bytes announced (`Content-Length`) or received, whichever is larger (for logs).
    public var bodyBytes: Int

    public init(method: String, path: String, headers: HTTPRequestHeaders = [:], query: [String: String] = [:],
                body: [UInt8] = [], bodyTooLarge: Bool = false, bodyBytes: Int? = nil) {
        self.method = method
        self.path = path
        self.headers = headers
        self.query = query
        self.body = body
        self.bodyTooLarge = bodyTooLarge
        self.bodyBytes = bodyBytes ?? body.count
    }

    /// The value of header `name` (any case), or nil.
    public func header(_ name: String) -> String? { headers[name] }

    /// `Content-Type` as sent, or nil.
    public var contentType: String? { headers["content-type"] }

    /// `Authorization` as sent, or nil.
    public var authorization: String? { headers["authorization"] }

    /// The media type of `Content-Type`: see `mediaType(of:)`.
    public var mediaType: String? { Self.mediaType(of: contentType) }

    /// The media type of a `Content-Type` value in lower case without parameters (RFC 9110 §8.3.1):
    /// `Application/JSON; charset=utf-8` → `application/json`. Nil for nil.
    public static func mediaType(of contentType: String?) -> String? {
        guard let contentType else { return nil }
        // Already a bare lower-case media type (what clients send): itself, nothing allocated.
        if contentType.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x80 && $0 != UInt8(ascii: ";") && !(65...90).contains($0) }) {
            return contentType
        }
        let type = contentType.utf8.prefix { $0 != UInt8(ascii: ";") }
        guard type.allSatisfy({ $0 < 0x80 }) else {
            // Not ASCII (rare): Foundation's Unicode-aware trimming and lowering.
            let text = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            return text.trimmingCharacters(in: .whitespaces).lowercased()
        }
        // ASCII, as every real media type is: trim spaces and tabs (the ASCII members of
        // `.whitespaces`) and lower A-Z byte by byte, without Foundation (a hot path of every request).
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var bytes = Array(type)
        while let last = bytes.last, isBlank(last) { bytes.removeLast() }
        let start = bytes.firstIndex { !isBlank($0) } ?? bytes.endIndex
        return String(decoding: bytes[start...].map { (65...90).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
