import Clocks
import Foundation

/// Maps an HTTP response from Apple to success or an `AppleIDError` (apple-api.md §2.6, §9):
/// - 2xx: success (the endpoint then parses the body);
/// - 400 with JSON `error`: `invalid_client`, `unsupported_grant_type`, `invalid_scope`,
///   `unauthorized_client` → configuration; `invalid_grant`, `invalid_request` and unknown
///   codes → permanent;
/// - 408, 429, 5xx → transient, with `Retry-After`;
/// - a non-empty body that is not JSON (an HTML edge page) or truncated JSON, on any non-2xx
///   status → transient, detail `unparseable response body (<media type>)`; on a 4xx it is
///   marked `retriesOnce` (one retry, then permanent: see `AppleIDError.atAttempt(_:)`);
/// - 3xx → configuration (Apple does not redirect; check the base URL);
/// - any other 4xx → permanent.
enum ResponseClassifier {
    static let configurationCodes: Set<String> = ["invalid_client", "unsupported_grant_type", "invalid_scope", "unauthorized_client"]

    /// nil for a 2xx response; otherwise the classified error.
    static func failure(for response: HTTPResponse, now: Date) -> AppleIDError? {
        let status = response.status
        if (200..<300).contains(status) { return nil }
        let retryAfter = RetryAfter.parse(response.header("Retry-After"), now: now)
        if status == 408 || status == 429 || (500..<600).contains(status) {
            let what = status == 429 ? "rate limited" : status == 408 ? "request timeout" : "server error"
            return AppleIDError(errorClass: .transient, httpStatus: status, retryAfter: retryAfter, detail: "HTTP \(status) \(what)")
        }
        if (300..<400).contains(status) {
            return AppleIDError(errorClass: .configuration, httpStatus: status, detail: "HTTP \(status) redirect; check the base URL")
        }
        guard !response.body.isEmpty else {
            return AppleIDError(errorClass: .permanent, httpStatus: status, retryAfter: retryAfter, detail: "HTTP \(status) with an empty body")
        }
        guard let object = jsonObject(response.body) else {
            return unparseable(response, retryAfter: retryAfter)
        }
        guard let code = LenientJSON.nonEmptyString(object["error"]) else {
            return AppleIDError(errorClass: .permanent, httpStatus: status, retryAfter: retryAfter, detail: "HTTP \(status) without an error code")
        }
        let errorClass: AppleIDError.Class = configurationCodes.contains(code) ? .configuration : .permanent
        var detail = code
        if let description = LenientJSON.nonEmptyString(object["error_description"]) {
            detail += ": " + sanitized(description)
        }
        return AppleIDError(errorClass: errorClass, appleError: code, httpStatus: status, retryAfter: retryAfter, detail: detail)
    }

    /// Transient error for a body that is not JSON (HTML edge page, truncated JSON).
    static func unparseable(_ response: HTTPResponse, retryAfter: Duration? = nil) -> AppleIDError {
        var error = AppleIDError(errorClass: .transient, httpStatus: response.status, retryAfter: retryAfter,
                                 detail: "unparseable response body (\(mediaType(response)))")
        error.retriesOnce = (400..<500).contains(response.status)
        return error
    }

    /// The body's JSON object members (`JSONObjectScanner`, strict RFC 8259), or nil if the body
    /// is not one JSON object (syntax error, truncation, an array, invalid UTF-8).
    static func jsonObject(_ body: [UInt8]) -> JSONObjectMembers? {
        try? JSONObjectScanner.members(of: body)
    }

    static func mediaType(_ response: HTTPResponse) -> String {
        guard let value = response.header("Content-Type") else { return "no content type" }
        let media = value.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        return media.isEmpty ? "no content type" : String(media.prefix(80))
    }

    /// Apple's free text, printable characters only, at most 200 characters.
    static func sanitized(_ text: String) -> String {
        let printable = String(text.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) }.map(Character.init))
        return printable.count > 200 ? String(printable.prefix(200)) + "…" : printable
    }
}

/// `Retry-After` (RFC 9110 §10.2.3): delta-seconds or an HTTP-date.
public enum RetryAfter {
    /// How long to wait from `now`, never negative; nil if absent or unparseable.
    public static func parse(_ value: String?, now: Date) -> Duration? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if text.allSatisfy(\.isNumber), let seconds = Double(text) { return .seconds(fractional: seconds) }
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return .seconds(fractional: date.timeIntervalSince(now)) }
        }
        return nil
    }
}
