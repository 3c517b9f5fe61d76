import Clocks

/// A failed call to Apple, classified for the job policy (reference/apple-api.md §2.6 and §9).
/// Every `AppleIDClient` call throws this and only this.
///
/// - `errorClass` is the opaque code callers branch on; `appleError` (Apple's `error` member),
///   `httpStatus`, `retryAfter` and `transportKind` are the context.
/// - `description` is safe to log: it never contains a token or client secret. Apple's free-text
///   `error_description`, when present, is included truncated to 200 characters; never branch on it.
public struct AppleIDError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Class: Sendable, Equatable {
        /// Retrying will not help for this item (e.g. `invalid_grant`: the token is dead).
        case permanent
        /// Our configuration is wrong (e.g. `invalid_client`): stop the batch and alert.
        case configuration
        /// Retry later with backoff, honouring `retryAfter` (429, 5xx, timeouts, HTML).
        case transient
    }

    public let errorClass: Class
    /// Apple's `error` code (`invalid_grant`, `invalid_client`, ...); nil for transport or
    /// HTTP-level failures.
    public let appleError: String?
    /// HTTP status, nil when no response arrived.
    public let httpStatus: Int?
    /// Parsed `Retry-After` (delta-seconds or HTTP-date, RFC 9110 §10.2.3), nil if absent.
    public let retryAfter: Duration?
    /// What went wrong, safe to log.
    public let detail: String
    /// Set when the failure came from the transport (no HTTP response).
    public let transportKind: TransportError.Kind?
    /// A transient error worth one retry only: a 4xx whose body is not JSON (an HTML edge page,
    /// apple-api.md §9) may be a passing edge fault, but a second one means the request itself is
    /// refused. Callers that know the attempt number apply `atAttempt(_:)`.
    public internal(set) var retriesOnce = false

    public init(
        errorClass: Class,
        appleError: String? = nil,
        httpStatus: Int? = nil,
        retryAfter: Duration? = nil,
        detail: String,
        transportKind: TransportError.Kind? = nil
    ) {
        self.errorClass = errorClass
        self.appleError = appleError
        self.httpStatus = httpStatus
        self.retryAfter = retryAfter
        self.detail = detail
        self.transportKind = transportKind
    }

    /// True when the caller should retry later.
    public var isRetryable: Bool { errorClass == .transient }

    /// True when the calling task was cancelled (the item should simply be released).
    public var isCancellation: Bool { transportKind == .cancelled }

    /// True when the request never reached Apple: no connection could be made (refused, DNS,
    /// TLS handshake, connect timeout), so Apple did nothing with it. Such a call charges no
    /// attempt; a run of them means Apple is unreachable from here, not that items are bad.
    public var neverReachedApple: Bool { transportKind == .connectionFailed }

    /// `apple <class> [http=N] [error=code] [retry_after=Ns]: detail`.
    public var description: String {
        var parts = ["apple \(errorClass)"]
        if let httpStatus { parts.append("http=\(httpStatus)") }
        if let appleError { parts.append("error=\(appleError)") }
        if let retryAfter { parts.append("retry_after=\(retryAfter.seconds)s") }
        return parts.joined(separator: " ") + ": " + detail
    }

    /// This error as it stands on attempt `attempt` (1-based) of an item: a `retriesOnce` error is
    /// transient on the first attempt and permanent from the second on, its detail saying so;
    /// every other error is returned unchanged.
    public func atAttempt(_ attempt: Int) -> AppleIDError {
        guard retriesOnce, errorClass == .transient, attempt >= 2 else { return self }
        return AppleIDError(errorClass: .permanent, appleError: appleError, httpStatus: httpStatus, retryAfter: nil,
                            detail: detail + "; again on attempt \(attempt), so not retried further", transportKind: transportKind)
    }

    /// True when the server's TLS certificate was refused or the CA file is unusable
    /// (`TransportError.Kind.certificate`): a configuration error (`errorClass` is
    /// `.configuration`), and nothing reached the server, so no item should be charged for it.
    public var isCertificateFailure: Bool { transportKind == .certificate }

    /// A transport failure: transient, except a refused certificate, which is configuration.
    static func transport(_ error: TransportError) -> AppleIDError {
        AppleIDError(errorClass: error.kind == .certificate ? .configuration : .transient, detail: error.description,
                     transportKind: error.kind)
    }

    static func configuration(_ detail: String) -> AppleIDError {
        AppleIDError(errorClass: .configuration, detail: detail)
    }

    static func malformedSuccess(_ status: Int, _ what: String) -> AppleIDError {
        AppleIDError(errorClass: .permanent, httpStatus: status, detail: "malformed success body: \(what)")
    }
}
