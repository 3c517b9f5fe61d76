import MicroHTTP

/// The sandbox's HTTP handler: routes each request, applies faults and latency to the Apple
/// endpoints, and counts what happened. Runs inline on the server's threads (it only computes);
/// latency and stalls are `.delay` results, resets `.reset`.
final class SandboxHandler: Sendable {
    let model: SandboxModel
    let apple: AppleEndpoints
    let admin: AdminEndpoints
    let plan: FaultPlan
    let throttle: RateThrottle

    /// Request body limits, bytes: Apple endpoints (Apple's real limit is unknown) and admin bulk loads.
    static let appleBodyLimit = 64 * 1024
    static let adminBodyLimit = 64 * 1024 * 1024

    init(model: SandboxModel, apple: AppleEndpoints, plan: FaultPlan, throttle: RateThrottle = RateThrottle(defaultLimit: nil)) {
        self.model = model
        self.apple = apple
        self.plan = plan
        self.throttle = throttle
        self.admin = AdminEndpoints(model: model, plan: plan, apple: apple, throttle: throttle)
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

    /// Handles one complete request (all of the body received, or `bodyTooLarge`).
    func respond(to req: HTTPServerRequest) -> HTTPServerResult {
        var tally = RequestTally(endpoint: Self.endpointLabel(req.path))
        let isApple = req.path.hasPrefix("/auth/")
        let arrival: ContinuousClock.Instant? = isApple && model.requestLog.isOn ? .now : nil
        var decision = FaultDecision(fault: nil, delayMs: 0, retryAfterSeconds: 0)
        // Parsed once here for the throttle's team and the endpoint (nil: not a readable form).
        let form = isApple && req.method == "POST" && !req.bodyTooLarge ? try? FormBody(req.body) : nil
        let team = budgetedTeam(of: req, form: form)
        let now = model.now
        if let team, let retryAfter = throttle.refusal(team: team, now: now) {
            // Throttled answers are immediate: no latency, no fault.
            tally.throttled = true
            tally.status = 429
            model.counters.withLock { $0.apply(tally) }
            throttle.record(team: team, status: 429, retryAfter: retryAfter, now: now)
            return .answer(FaultResponses.response(for: .tooManyRequests, retryAfter: retryAfter))
        }
        if isApple { decision = plan.decide() }
        let response: HTTPServerResponse
        if let fault = decision.fault, fault != .stall {
            tally.fault = fault.rawValue
            if fault == .reset {
                model.counters.withLock { $0.apply(tally) }
                if let arrival { log(req, arrival: arrival, decision: decision, status: 0) }
                return .reset
            }
            response = FaultResponses.response(for: fault, retryAfter: decision.retryAfterSeconds)
        } else {
            if decision.fault == .stall { tally.fault = FaultKind.stall.rawValue }
            response = req.bodyTooLarge ? Self.tooLarge(isApple: isApple) : route(req, form: form, tally: &tally)
        }
        tally.status = response.status
        tally.errorCode = response.errorCode
        model.counters.withLock { $0.apply(tally) }
        if let arrival { log(req, arrival: arrival, decision: decision, status: response.status) }
        if let team {
            throttle.record(team: team, status: response.status, retryAfter: response.header("Retry-After").flatMap { Int($0) },
                            now: now)
        }
        guard decision.delayMs > 0 else { return .answer(response) }
        return .delay(.microseconds(Int64((decision.delayMs * 1000).rounded())), response)
    }

    /// Records one `/auth/*` request in the model's request log (only called while it is on).
    private func log(_ req: HTTPServerRequest, arrival: ContinuousClock.Instant, decision: FaultDecision, status: Int) {
        let refreshToken = req.path == "/auth/token" ? (try? FormBody(req.body))?["refresh_token"] : nil
        model.requestLog.append(SandboxRequestRecord(
            arrival: arrival, path: req.path, fault: decision.fault?.rawValue, status: status,
            retryAfterSeconds: decision.fault == .tooManyRequests ? decision.retryAfterSeconds : nil,
            delay: .microseconds(Int64((decision.delayMs * 1000).rounded())), refreshToken: refreshToken))
    }

    private static func tooLarge(isApple: Bool) -> HTTPServerResponse {
        isApple ? .appleError("invalid_request", reason: "body_too_large", status: 413)
            : .adminError("body: larger than \(adminBodyLimit) bytes", status: 413)
    }

    private func route(_ req: HTTPServerRequest, form: FormBody?, tally: inout RequestTally) -> HTTPServerResponse {
        let now = model.now
        switch req.path {
        case "/auth/token":
            return req.method == "POST" ? apple.token(req, parsed: form, now: now, tally: &tally) : .methodNotAllowed("POST")
        case "/auth/revoke":
            return req.method == "POST" ? apple.revoke(req, parsed: form, now: now, tally: &tally) : .methodNotAllowed("POST")
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
}

/// Bodies for injected faults.
enum FaultResponses {
    static let htmlBody = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
        + "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>Apple</center>\r\n</body>\r\n</html>\r\n"
    static let html400Body = "<html>\r\n<head><title>400 Bad Request</title></head>\r\n<body>\r\n"
        + "<center><h1>400 Bad Request</h1></center>\r\n<hr><center>Apple</center>\r\n</body>\r\n</html>\r\n"
    static let truncatedBody = "{\"access_token\":\"a7c1e0b2f4d5.0.sbx.9f1c\",\"token_type\":\"Bea"

    static func response(for kind: FaultKind, retryAfter: Int) -> HTTPServerResponse {
        switch kind {
        case .tooManyRequests:
            var r = HTTPServerResponse.plain("Too Many Requests\n", status: 429)
            r.headers.append(HTTPHeader("Retry-After", String(retryAfter)))
            return r
        case .serverError: return .plain("Internal Server Error\n", status: 500)
        case .serviceUnavailable: return .plain("Service Unavailable\n", status: 503)
        case .html:
            return HTTPServerResponse(status: 502, body: Array(htmlBody.utf8), contentType: "text/html")
        case .html400:
            return HTTPServerResponse(status: 400, body: Array(html400Body.utf8), contentType: "text/html")
        case .truncated:
            return .appleJSON(truncatedBody)
        case .noAccessToken:
            return .appleJSON("{\"token_type\":\"Bearer\",\"expires_in\":3600}")
        case .invalidClient: return .appleError("invalid_client", reason: "scripted_fault")
        case .reset, .stall, .pass: return .plain("Internal Server Error\n", status: 500)
        }
    }
}
