import CMicroHTTPD
import Dispatch
import Foundation
import Synchronization

/// libmicrohttpd connection pointer, moved to the resume queue. Only used while the connection is
/// suspended (the daemon keeps it alive until it is resumed).
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// Routes requests, applies faults and latency, and owns the suspend/resume bookkeeping.
final class ServerCore: Sendable {
    let model: SandboxModel
    let apple: AppleEndpoints
    let admin: AdminEndpoints
    let plan: FaultPlan
    private let resumeQueue = DispatchQueue(label: "sandbox.resume", qos: .userInitiated)

    struct Suspended {
        var next: UInt64 = 0
        var waiting: [UInt64: ConnectionHandle] = [:]
        var stopping = false
    }
    private let suspended = Mutex(Suspended())

    /// Request body limits, bytes: Apple endpoints (Apple's real limit is unknown) and admin bulk loads.
    static let appleBodyLimit = 64 * 1024
    static let adminBodyLimit = 64 * 1024 * 1024

    init(model: SandboxModel, apple: AppleEndpoints, plan: FaultPlan) {
        self.model = model
        self.apple = apple
        self.plan = plan
        self.admin = AdminEndpoints(model: model, plan: plan, keys: apple.keySet)
    }

    static func bodyLimit(path: String) -> Int {
        path.hasPrefix("/__sandbox/") ? adminBodyLimit : appleBodyLimit
    }

    static func endpointLabel(_ path: String) -> String {
        switch path {
        case "/auth/token", "/auth/revoke", "/auth/keys", "/auth/usermigrationinfo": path
        case _ where path.hasPrefix("/__sandbox/"): "admin"
        default: "other"
        }
    }

    /// What to do after a request was fully received.
    enum Outcome {
        case respond(SandboxResponse, delayMs: Double)
        case reset
    }

    /// Handles one complete request (all of the body received).
    func process(_ req: SandboxRequest, overflow: Bool) -> Outcome {
        var tally = RequestTally(endpoint: Self.endpointLabel(req.path))
        let isApple = req.path.hasPrefix("/auth/")
        var decision = FaultDecision(fault: nil, delayMs: 0, retryAfterSeconds: 0)
        if isApple { decision = plan.decide() }
        let response: SandboxResponse
        if let fault = decision.fault, fault != .stall {
            tally.fault = fault.rawValue
            if fault == .reset {
                model.counters.withLock { $0.apply(tally) }
                return .reset
            }
            response = FaultResponses.response(for: fault, retryAfter: decision.retryAfterSeconds)
        } else {
            if decision.fault == .stall { tally.fault = FaultKind.stall.rawValue }
            response = overflow ? Self.tooLarge(isApple: isApple) : route(req, tally: &tally)
        }
        tally.status = response.status
        tally.errorCode = response.errorCode
        model.counters.withLock { $0.apply(tally) }
        return .respond(response, delayMs: decision.delayMs)
    }

    private static func tooLarge(isApple: Bool) -> SandboxResponse {
        isApple ? .appleError("invalid_request", reason: "body_too_large", status: 413)
            : .adminError("body: larger than \(adminBodyLimit) bytes", status: 413)
    }

    private func route(_ req: SandboxRequest, tally: inout RequestTally) -> SandboxResponse {
        let now = Date().timeIntervalSince1970
        switch req.path {
        case "/auth/token":
            return req.method == "POST" ? apple.token(req, now: now, tally: &tally) : .methodNotAllowed("POST")
        case "/auth/revoke":
            return req.method == "POST" ? apple.revoke(req, now: now, tally: &tally) : .methodNotAllowed("POST")
        case "/auth/usermigrationinfo":
            return req.method == "POST" ? apple.userMigrationInfo(req, now: now, tally: &tally) : .methodNotAllowed("POST")
        case "/auth/keys":
            return req.method == "GET" ? apple.keys() : .methodNotAllowed("GET")
        case _ where req.path.hasPrefix("/__sandbox/"):
            return admin.handle(req)
        default:
            return .notFound()
        }
    }

    // MARK: suspend / resume

    /// Suspends `connection` and schedules its resumption after `delayMs`. Returns false when the server
    /// is stopping (the caller must answer immediately instead).
    func suspend(_ connection: OpaquePointer, delayMs: Double) -> Bool {
        let ticket: UInt64? = suspended.withLock { s in
            if s.stopping { return nil }
            s.next += 1
            s.waiting[s.next] = ConnectionHandle(pointer: connection)
            // Under the lock, so stop() never resumes a connection that is not yet suspended.
            MHD_suspend_connection(connection)
            return s.next
        }
        guard let ticket else { return false }
        let micros = Int((delayMs * 1000).rounded())
        // A timer with zero leeway: `asyncAfter` lets libdispatch fire up to 10 % late (5 ms on a
        // 50 ms latency), which would make the sandbox slower than the latency it was told to add.
        let timer = DispatchSource.makeTimerSource(queue: resumeQueue)
        timer.schedule(deadline: .now() + .microseconds(micros), leeway: .nanoseconds(0))
        timer.setEventHandler { [self, timer] in
            resume(ticket)
            timer.cancel()
        }
        timer.resume()
        return true
    }

    private func resume(_ ticket: UInt64) {
        suspended.withLock { s in
            if let handle = s.waiting.removeValue(forKey: ticket) { MHD_resume_connection(handle.pointer) }
        }
    }

    /// Resumes every suspended connection and refuses new suspensions; call before `MHD_stop_daemon`,
    /// which aborts the process if any connection is still suspended.
    func resumeAllForShutdown() {
        suspended.withLock { s in
            s.stopping = true
            for handle in s.waiting.values { MHD_resume_connection(handle.pointer) }
            s.waiting.removeAll()
        }
    }
}

/// Bodies for injected faults.
enum FaultResponses {
    static let htmlBody = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
        + "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>Apple</center>\r\n</body>\r\n</html>\r\n"
    static let truncatedBody = "{\"access_token\":\"a7c1e0b2f4d5.0.sbx.9f1c\",\"token_type\":\"Bea"

    static func response(for kind: FaultKind, retryAfter: Int) -> SandboxResponse {
        switch kind {
        case .tooManyRequests:
            var r = SandboxResponse.plain("Too Many Requests\n", status: 429)
            r.headers.append(("Retry-After", String(retryAfter)))
            return r
        case .serverError: return .plain("Internal Server Error\n", status: 500)
        case .serviceUnavailable: return .plain("Service Unavailable\n", status: 503)
        case .html:
            return SandboxResponse(status: 502, body: Array(htmlBody.utf8), contentType: "text/html", noStore: false)
        case .truncated:
            return SandboxResponse(status: 200, body: Array(truncatedBody.utf8),
                                   contentType: SandboxResponse.appleJSONType, noStore: true)
        case .invalidClient: return .appleError("invalid_client", reason: "scripted_fault")
        case .reset, .stall, .pass: return .plain("Internal Server Error\n", status: 500)
        }
    }
}
