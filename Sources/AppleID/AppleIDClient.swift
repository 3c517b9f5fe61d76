import Foundation

/// A small facade over `HTTPTransport` for Sign in with Apple's REST endpoints
/// (apple-api.md §1–§6). Every call returns a `Result` whose failure is already classified
/// (`AppleIDError.Class`); nothing here retries, sleeps or logs — retry policy belongs to the
/// caller. Client authentication is `client_secret_post` (credentials in the form body).
public struct AppleIDClient: Sendable {
    /// e.g. `https://appleid.apple.com` or `http://127.0.0.1:PORT` (no trailing slash).
    public let baseURL: String
    public let transport: any HTTPTransport
    public let secrets: ClientSecretProvider
    /// Per-request timeout in seconds, at least 10 (apple-api.md §9: short timeouts fail).
    public let timeoutSeconds: Double
    let clock: @Sendable () -> Date

    /// - Parameters:
    ///   - baseURL: scheme and host (and port); a trailing `/` is removed.
    ///   - timeoutSeconds: raised to 10 if lower (default 15).
    ///   - clock: used to turn an HTTP-date `Retry-After` into seconds.
    public init(
        baseURL: String,
        transport: any HTTPTransport,
        secrets: ClientSecretProvider,
        timeoutSeconds: Double = 15,
        clock: @escaping @Sendable () -> Date = Date.init
    ) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.transport = transport
        self.secrets = secrets
        self.timeoutSeconds = timeoutSeconds.isFinite ? max(10, timeoutSeconds) : 15
        self.clock = clock
    }

    /// The client ID sent as `client_id` (and the secret's `sub`).
    public var clientID: String { secrets.clientID }

    /// Validates a refresh token: `POST /auth/token` with `grant_type=refresh_token`
    /// (apple-api.md §2.3). Apple may throttle more than one validation per user per day.
    /// - Returns: the TokenResponse (usually without `refresh_token`), or a classified error;
    ///   `invalid_grant` means the token is revoked or invalid.
    public func validateRefreshToken(_ refreshToken: String) async -> Result<TokenResponse, AppleIDError> {
        await tokenRequest([("grant_type", "refresh_token"), ("refresh_token", refreshToken)])
    }

    /// Gets a team access token: `POST /auth/token` with `grant_type=client_credentials`
    /// (apple-api.md §2.4). Valid 3600 s and reusable for migration calls.
    public func clientCredentialsToken(scope: String = "user.migration") async -> Result<TokenResponse, AppleIDError> {
        await tokenRequest([("grant_type", "client_credentials"), ("scope", scope)])
    }

    /// Revokes a token: `POST /auth/revoke` (apple-api.md §3). A 200 means revoked **or already
    /// invalid**; the body is ignored unless it is non-JSON (then the call is transient).
    /// - Parameter hint: `refresh_token` or `access_token`; anything else is a configuration error.
    public func revoke(token: String, hint: String) async -> Result<Void, AppleIDError> {
        guard hint == "refresh_token" || hint == "access_token" else {
            return .failure(.configuration("token_type_hint must be refresh_token or access_token"))
        }
        let result = await post("/auth/revoke", [("token", token), ("token_type_hint", hint)])
        return result.flatMap { response in
            if response.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return .success(()) }
            return ResponseClassifier.jsonObject(response.body) == nil ? .failure(ResponseClassifier.unparseable(response)) : .success(())
        }
    }

    /// Fetches Apple's JWKS: `GET /auth/keys` (apple-api.md §6).
    /// - Returns: the raw JSON bytes (checked to be a JSON object).
    public func fetchKeys() async -> Result<[UInt8], AppleIDError> {
        let request = HTTPRequest(method: "GET", url: baseURL + "/auth/keys", headers: [("Accept", "application/json")],
                                  timeoutSeconds: timeoutSeconds)
        return await send(request).flatMap { response in
            ResponseClassifier.jsonObject(response.body) == nil ? .failure(ResponseClassifier.unparseable(response)) : .success(response.body)
        }
    }

    // MARK: - Shared plumbing

    func tokenRequest(_ fields: [(String, String)]) async -> Result<TokenResponse, AppleIDError> {
        await post("/auth/token", fields).flatMap { response in
            parseObject(response).flatMap { object in
                TokenResponse.parse(object).mapError { .malformedSuccess(response.status, $0.reason) }
            }
        }
    }

    /// Form-POSTs `fields` plus `client_id` and `client_secret`, classifying non-2xx responses.
    func post(_ path: String, _ fields: [(String, String)], bearer: String? = nil) async -> Result<HTTPResponse, AppleIDError> {
        let secret: String
        do {
            secret = try secrets.secret()
        } catch {
            return .failure(.configuration("could not mint the client secret: \(error)"))
        }
        var headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")]
        if let bearer { headers.append(("Authorization", "Bearer " + bearer)) }
        let body = FormEncoding.encode(fields + [("client_id", clientID), ("client_secret", secret)])
        let request = HTTPRequest(method: "POST", url: baseURL + path, headers: headers, body: Array(body.utf8), timeoutSeconds: timeoutSeconds)
        return await send(request)
    }

    func send(_ request: HTTPRequest) async -> Result<HTTPResponse, AppleIDError> {
        let response: HTTPResponse
        do {
            response = try await transport.send(request)
        } catch {
            return .failure(.transport(error))
        }
        if let failure = ResponseClassifier.failure(for: response, now: clock()) {
            if failure.appleError == "invalid_client" { secrets.invalidate() }  // next call mints afresh
            return .failure(failure)
        }
        return .success(response)
    }

    func parseObject(_ response: HTTPResponse) -> Result<[String: Any], AppleIDError> {
        guard let object = ResponseClassifier.jsonObject(response.body) else {
            return .failure(ResponseClassifier.unparseable(response))
        }
        return .success(object)
    }
}
