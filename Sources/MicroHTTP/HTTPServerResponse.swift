/// One response header field, sent as given.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// One HTTP response: status, headers and body.
public struct HTTPServerResponse: Sendable, Equatable {
    public var status: Int
    public var body: [UInt8]
    /// Sent as `Content-Type` when set (first, before `headers`).
    public var contentType: String?
    /// Further header fields, sent in this order after `Content-Type`.
    public var headers: [HTTPHeader]
    /// An application error code the body carries (e.g. Apple's `invalid_grant`), for counters and
    /// logs. Never sent.
    public var errorCode: String?

    public init(status: Int, body: [UInt8] = [], contentType: String? = nil, headers: [HTTPHeader] = [],
                errorCode: String? = nil) {
        self.status = status
        self.body = body
        self.contentType = contentType
        self.headers = headers
        self.errorCode = errorCode
    }

    /// The value of the first header named `name` (any case), `Content-Type` included.
    public func header(_ name: String) -> String? {
        if HTTPRequestHeaders.sameName(name, "content-type") { return contentType }
        return headers.first { HTTPRequestHeaders.sameName($0.name, name) }?.value
    }

    /// `text` as `application/json`, e.g. `{"status":"stored"}`.
    public static func json(_ text: String, status: Int) -> HTTPServerResponse {
        HTTPServerResponse(status: status, body: Array(text.utf8), contentType: "application/json")
    }

    /// `text` as `text/plain`.
    public static func plain(_ text: String, status: Int) -> HTTPServerResponse {
        HTTPServerResponse(status: status, body: Array(text.utf8), contentType: "text/plain")
    }

    /// `503 {"error":"shutting_down"}`: sent to a request whose `.async` handler had not answered
    /// when the server stopped, or that arrived while it was stopping.
    public static let unavailable = json(#"{"error":"shutting_down"}"#, status: 503)
}

/// What a handler does with one request.
public enum HTTPServerResult: Sendable, Equatable {
    /// Send this response now.
    case answer(HTTPServerResponse)
    /// Send this response after `Duration`: never sooner, and at most about a millisecond later
    /// (the event loop serving the connection times it and sends the answers due within the same
    /// millisecond together). The connection is suspended meanwhile, so no server thread waits. A
    /// server that stops meanwhile sends the response at once.
    case delay(Duration, HTTPServerResponse)
    /// Close the connection without sending anything (a simulated connection reset).
    case reset
}
