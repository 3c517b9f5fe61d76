/// One HTTP request as the Apple client sends it. `timeout` bounds the whole transfer
/// (connect + send + receive). `description` shows method, URL and body size only: bodies carry
/// client secrets and tokens, and headers may carry a Bearer token.
public struct HTTPRequest: Sendable, CustomStringConvertible, CustomReflectable {
    public var method: String
    public var url: String
    public var headers: [(String, String)]
    public var body: [UInt8]
    public var timeout: Duration

    /// - Parameter timeout: for the whole transfer (default 15 s); `CurlTransport` applies
    ///   1 s ... 1 hour.
    public init(method: String = "GET", url: String, headers: [(String, String)] = [], body: [UInt8] = [], timeout: Duration = .seconds(15)) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    /// First value of a header, matched case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    public var description: String { "\(method) \(url) (\(body.count) body bytes)" }
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

/// One HTTP response: status, headers in arrival order, and the raw body. `description` shows
/// the status and body size only (success bodies carry tokens).
public struct HTTPResponse: Sendable, CustomStringConvertible, CustomReflectable {
    public var status: Int
    /// The header fields in arrival order (made from the received bytes when read).
    public var headers: [(String, String)] {
        get { fields.pairs }
        set { fields = ResponseHeaders(newValue) }
    }
    public var body: [UInt8]
    /// The header fields as received (`ResponseHeaders`).
    var fields: ResponseHeaders

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.init(status: status, fields: ResponseHeaders(headers), body: body)
    }

    init(status: Int, fields: ResponseHeaders, body: [UInt8]) {
        self.status = status
        self.fields = fields
        self.body = body
    }

    /// First value of a header, its name matched case-insensitively (ASCII).
    public func header(_ name: String) -> String? {
        fields.value(of: name)
    }

    public var description: String { "HTTP \(status) (\(body.count) body bytes)" }
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

/// The request never produced an HTTP response. `message` names the failure (e.g. the curl
/// error text) and never contains request bodies or headers.
public struct TransportError: Error, Sendable, CustomStringConvertible, Equatable {
    public enum Kind: Sendable, Equatable {
        /// The transfer exceeded the request's `timeout`.
        case timeout
        /// No connection could be made (refused, DNS, TLS handshake).
        case connectionFailed
        /// The connection broke mid-exchange or the server closed it without a response.
        case connectionReset
        /// The server's TLS certificate was refused (it does not chain to a trusted CA, it names
        /// another host, it has expired or is not yet valid) or the trusted CA file cannot be used.
        /// No request byte was sent. A configuration error, not an outage: retrying cannot help
        /// until the trust settings (or the server's certificate) are fixed.
        case certificate
        /// The calling task was cancelled; the transfer was aborted.
        case cancelled
        /// Anything else (bad URL, response too large, transport shut down).
        case other
    }

    public let kind: Kind
    public let message: String

    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "transport \(kind): \(message)" }
}

/// The seam between the Apple client and the network. `CurlTransport` is the real one;
/// `TestSupport.ScriptedTransport` is the in-memory twin for tests.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the response for any HTTP status (non-2xx is not an error
    /// here). Throws only when no response was obtained.
    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse
}
