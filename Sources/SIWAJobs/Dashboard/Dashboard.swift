import Clocks
import Foundation
import MicroHTTP
import Postgres
import Queue

/// `siwa-jobs dashboard`: a read-only web dashboard on MicroHTTP (server-rendered HTML, inline
/// SVG, no script, no external resource; pages refresh themselves). Reads as `siwa_dashboard`
/// only (`DashboardReader`). Answers carry `Content-Security-Policy: default-src 'none'` (styles
/// inline only, no script at all) besides escaping every value, and `Cache-Control: no-store`.
///
/// Access: with a bearer token configured, every request but `GET /healthz` needs
/// `Authorization: Bearer <token>` (compared in constant time; 401 otherwise). The CLI refuses to
/// bind anything but loopback without one.
public struct Dashboard: Sendable {
    let reader: DashboardReader
    let bearerToken: String?
    let refreshSeconds: Int
    let logger: Logger

    public init(reader: DashboardReader, bearerToken: String?, refreshSeconds: Int, logger: Logger) {
        self.reader = reader
        self.bearerToken = bearerToken
        self.refreshSeconds = refreshSeconds
        self.logger = logger
    }

    /// The server (not started).
    public func server(host: String, port: UInt16, clock: any WallClock) -> HTTPServer {
        let configuration = HTTPServer.Configuration(host: host, port: port, threads: 2, connectionLimit: 128,
                                                     bodyLimit: 1024, gracePeriod: .seconds(2), clock: clock)
        return HTTPServer(configuration: configuration, handler: .async { request in .answer(await self.handle(request)) })
    }

    /// Answers one request.
    public func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        if request.path == "/healthz" { return .plain("ok\n", status: 200) }
        guard authorized(request) else {
            return HTTPServerResponse(status: 401, body: Array("a bearer token is required\n".utf8), contentType: "text/plain",
                                      headers: [HTTPHeader("WWW-Authenticate", "Bearer realm=\"siwa-jobs\"")])
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            return HTTPServerResponse(status: 405, body: Array("read-only: GET only\n".utf8), contentType: "text/plain",
                                      headers: [HTTPHeader("Allow", "GET")])
        }
        let refresh = refreshSeconds
        do {
            let page: HTML? = try await reader.read { session in
                switch request.path {
                case "/": return try await DashboardPages.jobs(session, refreshSeconds: refresh)
                case "/tokens": return try await DashboardPages.tokens(session, refreshSeconds: refresh)
                case "/notifications": return try await DashboardPages.notifications(session, refreshSeconds: refresh)
                case "/transfers": return try await DashboardPages.transfers(session, refreshSeconds: refresh)
                case "/workers": return try await DashboardPages.workers(session, refreshSeconds: refresh)
                default:
                    guard request.path.hasPrefix("/jobs/"), let id = Int64(request.path.dropFirst("/jobs/".count)) else { return nil }
                    return try await DashboardPages.job(id, session, refreshSeconds: refresh)
                }
            }
            guard let page else { return Self.html(Self.notFound(refresh), status: 404) }
            return Self.html(page, status: 200)
        } catch {
            logger.warning("dashboard page failed", ["http.path": request.path, "error": "\(error)"])
            let body = DashboardPages.document(title: "Database unavailable", path: "", refreshSeconds: refresh,
                                               body: "<p class=\"warn\">The page could not be read from the database; it retries at the next refresh.</p>")
            return Self.html(body, status: 503)
        }
    }

    static func notFound(_ refresh: Int) -> HTML {
        DashboardPages.document(title: "Not found", path: "", refreshSeconds: refresh, body: "<p>No such page or job.</p>")
    }

    static func html(_ page: HTML, status: Int) -> HTTPServerResponse {
        HTTPServerResponse(status: status, body: Array(page.markup.utf8), contentType: "text/html; charset=utf-8", headers: [
            HTTPHeader("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; frame-ancestors 'none'"),
            HTTPHeader("X-Content-Type-Options", "nosniff"),
            HTTPHeader("Referrer-Policy", "no-referrer"),
            HTTPHeader("Cache-Control", "no-store"),
        ])
    }

    /// True without a configured token, or when `Authorization: Bearer` carries it.
    func authorized(_ request: HTTPServerRequest) -> Bool {
        guard let bearerToken else { return true }
        guard let header = request.authorization, header.lowercased().hasPrefix("bearer ") else { return false }
        return Self.constantTimeEqual(Array(header.dropFirst(7).trimmingCharacters(in: .whitespaces).utf8), Array(bearerToken.utf8))
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
        for i in 0..<max(a.count, b.count) {
            difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
        }
        return difference == 0 && a.count == b.count
    }
}
