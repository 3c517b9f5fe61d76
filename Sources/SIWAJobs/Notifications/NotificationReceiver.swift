import Foundation
import HTTPServer
import Postgres
import Queue

/// The HTTP side of `siwa-jobs notifications serve` (apple-api.md §8.1): Apple POSTs
/// `{"payload":"<JWT>"}` as JSON.
///
/// Answers:
/// - `200 {"status":"stored"}` once the row is committed, `200 {"status":"duplicate"}` when a row
///   with the same `jti` exists (no second row);
/// - `400` body not a JSON object with a string `payload`; `413` body over `bodyLimit` bytes;
///   `405` not a POST: all logged (without the body) and never stored or processed;
/// - `503` the database could not commit the row (Apple may retry).
/// Plain HTTP: TLS is terminated in front of it.
public struct NotificationReceiver: Sendable {
    /// Largest request body read, bytes (64 KiB; a notification JWT is about 1 KiB).
    public static let bodyLimit = 64 * 1024

    let inbox: NotificationInbox
    let logger: Logger
    let onStored: @Sendable () -> Void

    /// - Parameter onStored: called after each new row is committed (wakes the planner).
    public init(inbox: NotificationInbox, logger: Logger, onStored: @escaping @Sendable () -> Void = {}) {
        self.inbox = inbox
        self.logger = logger
        self.onStored = onStored
    }

    public func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        if request.method == "GET", request.path == "/healthz" { return .json(#"{"status":"ok"}"#, status: 200) }
        guard request.method == "POST" else {
            logger.warning("notification refused: method not allowed", ["http.method": String(request.method.prefix(16))])
            return .json(#"{"error":"method_not_allowed"}"#, status: 405)
        }
        if request.bodyTooLarge {
            logger.warning("notification refused: body too large", [
                "body.bytes": "\(request.bodyBytes)", "body.limit": "\(Self.bodyLimit)",
            ])
            return .json(#"{"error":"body_too_large"}"#, status: 413)
        }
        guard let payload = Self.payload(request.body) else {
            logger.warning("notification refused: body is not a JSON object with a string payload", [
                "body.bytes": "\(request.body.count)",
            ])
            return .json(#"{"error":"invalid_body","message":"expected a JSON object {\"payload\":\"<JWT>\"}"}"#, status: 400)
        }
        do {
            switch try await inbox.store(payload: payload) {
            case .stored(let id):
                logger.info("notification stored", ["notification.id": "\(id)"])
                onStored()
                return .json(#"{"status":"stored"}"#, status: 200)
            case .duplicate:
                logger.info("notification duplicate: jti already stored")
                return .json(#"{"status":"duplicate"}"#, status: 200)
            }
        } catch {
            logger.error("notification not stored: database error", ["error": String(describing: error).prefix(300).description])
            return .json(#"{"error":"unavailable"}"#, status: 503)
        }
    }

    /// The `payload` string of a JSON object body; nil for anything else (an empty string, or one
    /// holding NUL, which PostgreSQL text cannot store).
    static func payload(_ body: [UInt8]) -> String? {
        guard !body.isEmpty,
              let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let payload = object["payload"] as? String, !payload.isEmpty,
              !payload.utf8.contains(0) else { return nil }
        return payload
    }
}
