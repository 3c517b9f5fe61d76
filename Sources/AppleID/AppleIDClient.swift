import Clocks
import Foundation

/// A small facade over `HTTPTransport` for Sign in with Apple's REST endpoints
/// (apple-api.md §1–§6). Every call throws `AppleIDError`, already classified
/// (`AppleIDError.Class`); nothing here retries, sleeps or logs — retry policy belongs to the
/// caller. Client authentication is `client_secret_post` (credentials in the form body).
public struct AppleIDClient: Sendable {
    /// e.g. `https://appleid.apple.com` or `http://127.0.0.1:PORT` (no trailing slash).
    public let baseURL: String
    public let transport: any HTTPTransport
    public let secrets: ClientSecretProvider
    /// Per-request timeout, at least 10 s (apple-api.md §9: short timeouts fail).
    public let timeout: Duration
    /// Awaited before each call to a `GatedEndpoint` and told its answer (the team's rate
    /// budget); nil sends at once.
    public let gate: (any RequestGate)?
    let clock: any WallClock
    /// `baseURL` + each gated endpoint's path, made once (`GatedEndpoint.allCases` order).
    private let endpointURLs: [String]

    /// The headers of every form POST.
    private static let formHeaders = [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")]

    /// - Parameters:
    ///   - baseURL: scheme and host (and port); a trailing `/` is removed.
    ///   - timeout: per request (default 15 s); raised to 10 s if lower.
    ///   - clock: turns an HTTP-date `Retry-After` into a duration (default the system clock).
    ///   - gate: admits each call to `/auth/token`, `/auth/revoke` and `/auth/usermigrationinfo`
    ///     (default none).
    public init(
        baseURL: String,
        transport: any HTTPTransport,
        secrets: ClientSecretProvider,
        timeout: Duration = .seconds(15),
        clock: any WallClock = SystemClock(),
        gate: (any RequestGate)? = nil
    ) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.transport = transport
        self.secrets = secrets
        self.timeout = max(.seconds(10), timeout)
        self.clock = clock
        self.gate = gate
        self.endpointURLs = GatedEndpoint.allCases.map { base + $0.rawValue }
    }

    /// The URL of `endpoint`.
    func url(_ endpoint: GatedEndpoint) -> String {
        switch endpoint {
        case .token: endpointURLs[0]
        case .revoke: endpointURLs[1]
        case .userMigrationInfo: endpointURLs[2]
        }
    }

    /// The client ID sent as `client_id` (and the secret's `sub`).
    public var clientID: String { secrets.clientID }

    /// Validates a refresh token: `POST /auth/token` with `grant_type=refresh_token`
    /// (apple-api.md §2.3). Apple may throttle more than one validation per user per day.
    /// - Returns: the TokenResponse (usually without `refresh_token`; a 200 without `access_token`
    ///   is still a valid token, with `TokenResponse.missingAccessTokenWarning` in `warnings`).
    /// - Throws: `AppleIDError`; `invalid_grant` (permanent) means the token is revoked or invalid.
    @discardableResult
    public func validateRefreshToken(_ refreshToken: String) async throws(AppleIDError) -> TokenResponse {
        try await tokenRequest([("grant_type", "refresh_token"), ("refresh_token", refreshToken)], requireAccessToken: false)
    }

    /// Gets a team access token: `POST /auth/token` with `grant_type=client_credentials`
    /// (apple-api.md §2.4). Valid 3600 s and reusable for migration calls.
    /// - Throws: `AppleIDError`; `invalid_client` / `invalid_scope` are configuration errors.
    public func clientCredentialsToken(scope: String = "user.migration") async throws(AppleIDError) -> TokenResponse {
        try await tokenRequest([("grant_type", "client_credentials"), ("scope", scope)])
    }

    /// Revokes a token: `POST /auth/revoke` (apple-api.md §3). Returning means Apple answered 200:
    /// revoked **or already invalid**; the body is ignored unless it is non-JSON (then transient).
    /// - Parameter hint: `refresh_token` or `access_token`; anything else is a configuration error
    ///   and nothing is sent.
    /// - Throws: `AppleIDError`.
    public func revoke(token: String, hint: String) async throws(AppleIDError) {
        guard hint == "refresh_token" || hint == "access_token" else {
            throw .configuration("token_type_hint must be refresh_token or access_token")
        }
        let response = try await post(.revoke, [("token", token), ("token_type_hint", hint)])
        if response.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return }
        _ = try parseObject(response)
    }

    /// Fetches Apple's JWKS: `GET /auth/keys` (apple-api.md §6).
    /// - Returns: the raw JSON bytes (checked to be a JSON object).
    /// - Throws: `AppleIDError` (a non-JSON body is transient).
    public func fetchKeys() async throws(AppleIDError) -> [UInt8] {
        let request = HTTPRequest(method: "GET", url: baseURL + "/auth/keys", headers: [("Accept", "application/json")],
                                  timeout: timeout)
        let response = try await send(request)
        _ = try parseObject(response)
        return response.body
    }

    // MARK: - Shared plumbing

    func tokenRequest(_ fields: [(String, String)], requireAccessToken: Bool = true) async throws(AppleIDError) -> TokenResponse {
        let response = try await post(.token, fields)
        return try TokenResponse.parse(try parseObject(response), status: response.status, requireAccessToken: requireAccessToken)
    }

    /// Form-POSTs `fields` plus `client_id` and `client_secret` to `endpoint` once the gate
    /// admits it, classifying non-2xx responses.
    func post(_ endpoint: GatedEndpoint, _ fields: [(String, String)], bearer: String? = nil) async throws(AppleIDError) -> HTTPResponse {
        let credentials: [UInt8]
        do {
            credentials = try secrets.credentialFields()
        } catch {
            throw .configuration("could not mint the client secret: \(error)")
        }
        var headers = Self.formHeaders
        if let bearer { headers.append(("Authorization", "Bearer " + bearer)) }
        // `fields`, then client_id and client_secret (encoded once per secret by the provider).
        var body = FormEncoding.encodedBytes(fields, reservingExtra: credentials.count + 1)
        if !body.isEmpty { body.append(UInt8(ascii: "&")) }
        body.append(contentsOf: credentials)
        let request = HTTPRequest(method: "POST", url: url(endpoint), headers: headers, body: body, timeout: timeout)
        return try await send(request, gated: endpoint)
    }

    /// Sends `request` (after the gate admits it, for a gated endpoint); returns 2xx responses
    /// and throws the classified error for the rest.
    func send(_ request: HTTPRequest, gated endpoint: GatedEndpoint? = nil) async throws(AppleIDError) -> HTTPResponse {
        if let endpoint, let gate { try await gate.admit(endpoint) }
        let response: HTTPResponse
        do {
            response = try await transport.send(request)
        } catch {
            if let endpoint, let gate { await gate.unanswered(endpoint) }
            throw .transport(error)
        }
        if let endpoint, let gate {
            await gate.observe(endpoint, status: response.status,
                               retryAfter: RetryAfter.parse(response.header("Retry-After"), now: clock.now))
        }
        if let failure = ResponseClassifier.failure(for: response, now: clock.now) {
            if failure.appleError == "invalid_client" { secrets.invalidate() }  // next call mints afresh
            throw failure
        }
        return response
    }

    /// The body's JSON object members; a body that is not one (HTML, truncated) is transient.
    func parseObject(_ response: HTTPResponse) throws(AppleIDError) -> JSONObjectMembers {
        guard let object = ResponseClassifier.jsonObject(response.body) else {
            throw ResponseClassifier.unparseable(response)
        }
        return object
    }
}
