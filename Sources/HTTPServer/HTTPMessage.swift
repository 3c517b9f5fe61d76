/// One fully received HTTP request (RFC 9110), as an `HTTPServer` handler sees it.
public struct HTTPServerRequest: Sendable {
    public var method: String
    /// Path without the query string, e.g. `/apple/notifications`.
    public var path: String
    /// Request headers the handler may need (`Content-Type`, `Content-Length`, `User-Agent`), by
    /// lower-case name.
    public var headers: [String: String]
    /// The body, empty when `bodyTooLarge`.
    public var body: [UInt8]
    /// True when the body exceeded the server's `bodyLimit`; the excess was discarded unread.
    public var bodyTooLarge: Bool
    /// Bytes announced or received, whichever is larger (for logs).
    public var bodyBytes: Int

    public init(method: String, path: String, headers: [String: String] = [:], body: [UInt8],
                bodyTooLarge: Bool = false, bodyBytes: Int? = nil) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.bodyTooLarge = bodyTooLarge
        self.bodyBytes = bodyBytes ?? body.count
    }
}

/// One HTTP response.
public struct HTTPServerResponse: Sendable, Equatable {
    public var status: Int
    public var body: [UInt8]
    public var contentType: String?

    public init(status: Int, body: [UInt8] = [], contentType: String? = nil) {
        self.status = status
        self.body = body
        self.contentType = contentType
    }

    /// `{"status":"<word>"}` or an error object, as `application/json`.
    public static func json(_ text: String, status: Int) -> HTTPServerResponse {
        HTTPServerResponse(status: status, body: Array(text.utf8), contentType: "application/json")
    }

    /// Sent to requests still waiting when the server stops.
    public static let unavailable = json(#"{"error":"shutting_down"}"#, status: 503)
}

/// Why an `HTTPServer` could not start.
public struct HTTPServerError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
