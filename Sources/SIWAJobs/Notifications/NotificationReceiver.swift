import Clocks
import Foundation
import MicroHTTP
import Postgres
import Queue
import SIWACrypto

/// The HTTP side of `siwa-jobs notifications serve` (apple-api.md §8.1): Apple POSTs
/// `{"payload":"<JWT>"}` as JSON.
///
/// Answers:
/// - `200 {"status":"stored"}` once the row is committed, `200 {"status":"duplicate"}` when the
///   same payload is stored already (no second row);
/// - `404` a path other than `path` (or the probes); `405` not a POST; `413` body over `bodyLimit`
///   bytes (refused before the body is read when `Content-Length` announces it); `415` a content type that is not JSON; `400` body not a JSON object with a string
///   `payload`, or a payload that is not a compact JWS (three base64url segments, JSON header and
///   claims) with a string `jti`: all logged (without the body) and never stored or processed;
/// - `503` the database could not commit the row, or gave no answer within the inbox's timeout
///   (Apple may retry).
/// - `GET /healthz`: `200` while the process serves HTTP (liveness; the database is not asked);
///   `GET /readyz`: `200` when the database answers in time and accepts writes, else `503` with
///   the reason (`database_unavailable`, or `database_read_only` for a standby) (readiness).
/// Plain HTTP: TLS is terminated in front of it.
public struct NotificationReceiver: Sendable {
    /// Largest request body read, bytes: what can still verify, the largest token the verifier
    /// accepts (`JWS.maxTokenBytes`, 16 KiB) in its `{"payload": "…"}` wrapper with room for
    /// whitespace (a notification JWT is about 1 KiB). A longer one is answered 413 before any of
    /// it is read.
    public static let bodyLimit = JWS.maxTokenBytes + 1024
    /// How many connections the receiver serves, and how long a silent one stays open: Apple
    /// sends one small POST at a time, so a lower ceiling than the sandbox's protects the
    /// database pool and the threads from piles of idle or stalled connections.
    public struct ConnectionLimits: Sendable, Equatable {
        /// Connections served at once; more wait in the listen backlog. Default 256.
        public var total: Int
        /// Connections at once from one client address (0: no limit). Default 64: a reverse
        /// proxy is one address, so this bounds one misbehaving client without a proxy.
        public var perAddress: Int
        /// A connection silent this long (idle keep-alive, or a request whose headers or body
        /// stopped arriving) is closed; whole seconds. Default 30 s: keep a proxy's upstream
        /// keep-alive timeout below it.
        public var idleTimeout: Duration
        /// How long a connection has, from its opening or its previous answer, to deliver a
        /// whole request and be answered; then it is cut, however steadily it trickles bytes.
        /// Default 30 s (3 × the default database timeout; Apple's POST takes milliseconds).
        public var requestDeadline: Duration

        public init(total: Int = 256, perAddress: Int = 64, idleTimeout: Duration = .seconds(30),
                    requestDeadline: Duration = .seconds(30)) {
            self.total = total
            self.perAddress = perAddress
            self.idleTimeout = idleTimeout
            self.requestDeadline = requestDeadline
        }
    }

    /// The listen backlog.
    static let listenBacklog = 512
    /// How long a graceful stop lets requests in flight (a database write) finish before the
    /// rest are answered 503.
    public static let gracePeriod: Duration = .seconds(10)

    let inbox: NotificationInbox
    let logger: Logger
    /// The one path POSTs are accepted on, e.g. `/` or `/apple/notifications`.
    public let path: String
    let onStored: @Sendable () -> Void

    /// - Parameters:
    ///   - path: the path notifications are POSTed to (default `/`).
    ///   - onStored: called after each new row is committed (wakes the planner).
    public init(inbox: NotificationInbox, logger: Logger, path: String = "/", onStored: @escaping @Sendable () -> Void = {}) {
        self.inbox = inbox
        self.logger = logger
        self.path = path
        self.onStored = onStored
    }

    /// The HTTP server for this receiver: a `Service` that serves until `shutdownGracefully()` (then
    /// requests in flight get `gracePeriod` to be stored and answered) or cancellation.
    /// - Parameters:
    ///   - host: IPv4 address to bind, e.g. `127.0.0.1` or `0.0.0.0`.
    ///   - port: TCP port; 0 lets the kernel pick (read it from `start()` or `port`).
    ///   - threads: libmicrohttpd threads.
    ///   - limits: connection caps, the idle timeout and the request deadline.
    ///   - clock: times the grace period.
    ///   - observe: told each answer's status (metrics).
    public func server(host: String, port: UInt16, threads: Int = 2, limits: ConnectionLimits = ConnectionLimits(),
                       clock: any WallClock, observe: @escaping @Sendable (Int) -> Void = { _ in }) -> HTTPServer {
        var configuration = HTTPServer.Configuration(
            host: host, port: port, threads: threads, connectionLimit: limits.total, connectionsPerIP: limits.perAddress,
            idleTimeout: limits.idleTimeout, listenBacklog: Self.listenBacklog, bodyLimit: Self.bodyLimit,
            gracePeriod: Self.gracePeriod, clock: clock)
        configuration.requestDeadline = limits.requestDeadline
        return HTTPServer(configuration: configuration, handler: .async { request in
            let response = await self.handle(request)
            observe(response.status)
            return .answer(response)
        })
    }

    /// Answers one request (see the type's documentation).
    public func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        if request.method == "GET", request.path == "/healthz" { return .json(#"{"status":"ok"}"#, status: 200) }
        if request.method == "GET", request.path == "/readyz" { return await readiness() }
        guard request.path == path else {
            logger.warning("notification refused: unknown path", ["http.path": String(request.path.prefix(100))])
            return .json(#"{"error":"not_found"}"#, status: 404)
        }
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
        guard Self.isJSON(contentType: request.contentType) else {
            logger.warning("notification refused: content type is not JSON", [
                "http.content_type": String((request.contentType ?? "(none)").prefix(100)),
            ])
            return .json(#"{"error":"unsupported_media_type","message":"expected Content-Type: application/json"}"#, status: 415)
        }
        guard let payload = Self.payload(request.body) else {
            logger.warning("notification refused: body is not a JSON object with a string payload", [
                "body.bytes": "\(request.body.count)",
            ])
            return .json(#"{"error":"invalid_body","message":"expected a JSON object {\"payload\":\"<JWT>\"}"}"#, status: 400)
        }
        guard let jti = NotificationInbox.unverifiedJTI(payload) else {
            logger.warning("notification refused: payload is not a compact JWS with a jti", [
                "payload.bytes": "\(payload.utf8.count)",
            ])
            return .json(#"{"error":"invalid_payload","message":"payload must be a compact JWS whose claims hold a string jti without control characters"}"#,
                         status: 400)
        }
        do {
            switch try await inbox.store(payload: payload, jti: jti) {
            case .stored(let id):
                logger.info("notification stored", ["notification.id": "\(id)"])
                onStored()
                return .json(#"{"status":"stored"}"#, status: 200)
            case .duplicate:
                logger.info("notification duplicate: the same payload is stored already")
                return .json(#"{"status":"duplicate"}"#, status: 200)
            }
        } catch {
            logger.error("notification not stored: database error", ["error": String(describing: error).prefix(300).description])
            return .json(#"{"error":"unavailable"}"#, status: 503)
        }
    }

    /// `/readyz`: the database answers in time and accepts writes (503 `database_read_only` for a
    /// hot standby or read-only transactions, with the reason).
    private func readiness() async -> HTTPServerResponse {
        do {
            try await inbox.ping()
            return .json(#"{"status":"ready"}"#, status: 200)
        } catch let error as DatabaseError where error.meaning == .readOnly {
            logger.warning("not ready: the database is read-only", ["error": String(describing: error).prefix(300).description])
            return .json(#"{"error":"database_read_only","message":"the database is read-only: a standby or a failover in progress"}"#,
                         status: 503)
        } catch {
            logger.warning("not ready: database check failed", ["error": String(describing: error).prefix(300).description])
            return .json(#"{"error":"database_unavailable"}"#, status: 503)
        }
    }

    /// True for a JSON media type (RFC 8259 §11 `application/json`; also `text/json` and
    /// `application/<x>+json`), in any case and with any parameters such as `charset`. Apple's
    /// documentation gives the body as JSON but not the header (apple-api.md §8.1), so every JSON
    /// spelling is accepted; a missing or other type is refused.
    static func isJSON(contentType: String?) -> Bool {
        guard let media = HTTPServerRequest.mediaType(of: contentType) else { return false }
        if media == "application/json" || media == "text/json" { return true }
        return media.hasPrefix("application/") && media.hasSuffix("+json") && media.count > "application/+json".count
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
