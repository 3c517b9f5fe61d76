/// A failed call to Apple, classified for the job policy (reference/apple-api.md §2.6 and §9).
///
/// `description` is safe to log: it never contains a token or client secret. Apple's free-text
/// `error_description`, when present, is included truncated to 200 characters; never branch on it.
public struct AppleIDError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Class: Sendable, Equatable {
        /// Retrying will not help for this item (e.g. `invalid_grant`: the token is dead).
        case permanent
        /// Our configuration is wrong (e.g. `invalid_client`): stop the batch and alert.
        case configuration
        /// Retry later with backoff, honouring `retryAfterSeconds` (429, 5xx, timeouts, HTML).
        case transient
    }

    public let errorClass: Class
    /// Apple's `error` code (`invalid_grant`, `invalid_client`, ...); nil for transport or
    /// HTTP-level failures.
    public let appleError: String?
    /// HTTP status, nil when no response arrived.
    public let httpStatus: Int?
    /// Parsed `Retry-After` in seconds (delta-seconds or HTTP-date), nil if absent.
    public let retryAfterSeconds: Double?
    /// What went wrong, safe to log.
    public let detail: String
    /// Set when the failure came from the transport (no HTTP response).
    public let transportKind: TransportError.Kind?

    public init(
        errorClass: Class,
        appleError: String? = nil,
        httpStatus: Int? = nil,
        retryAfterSeconds: Double? = nil,
        detail: String,
        transportKind: TransportError.Kind? = nil
    ) {
        self.errorClass = errorClass
        self.appleError = appleError
        self.httpStatus = httpStatus
        self.retryAfterSeconds = retryAfterSeconds
        self.detail = detail
        self.transportKind = transportKind
    }

    /// True when the caller should retry later.
    public var isRetryable: Bool { errorClass == .transient }

    /// True when the calling task was cancelled (the item should simply be released).
    public var isCancellation: Bool { transportKind == .cancelled }

    public var description: String {
        var parts = ["apple \(errorClass)"]
        if let httpStatus { parts.append("http=\(httpStatus)") }
        if let appleError { parts.append("error=\(appleError)") }
        if let retryAfterSeconds { parts.append("retry_after=\(retryAfterSeconds)s") }
        return parts.joined(separator: " ") + ": " + detail
    }

    static func transport(_ error: TransportError) -> AppleIDError {
        AppleIDError(errorClass: .transient, detail: error.description, transportKind: error.kind)
    }

    static func configuration(_ detail: String) -> AppleIDError {
        AppleIDError(errorClass: .configuration, detail: detail)
    }

    static func malformedSuccess(_ status: Int, _ what: String) -> AppleIDError {
        AppleIDError(errorClass: .permanent, httpStatus: status, detail: "malformed success body: \(what)")
    }
}
