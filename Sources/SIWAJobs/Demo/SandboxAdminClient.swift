import AppleID
import Foundation

/// Client for the sandbox's admin API (`/__sandbox/...`), which is not part of Apple's surface:
/// registering teams and refresh tokens, and reading the seeded truth and counters.
public struct SandboxAdminClient: Sendable {
    public let baseURL: String
    let transport: any HTTPTransport

    public init(baseURL: String, transport: any HTTPTransport = CurlTransport(maxConnectionsPerHost: 4)) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.transport = transport
    }

    /// A client of a sandbox served over HTTPS with its own CA (`sandbox --tls`): `caFile` (the
    /// CA certificate PEM it wrote) is trusted besides the system store.
    public init(baseURL: String, caFile: String?) {
        self.init(baseURL: baseURL, transport: CurlTransport(maxConnectionsPerHost: 4, caBundlePath: caFile))
    }

    /// Registers a team's public key under `kid` and its client IDs.
    public func registerTeam(teamID: String, keyID: String, publicKeyPEM: String, clientIDs: [String]) async throws {
        _ = try await post("/__sandbox/teams", [
            "team_id": teamID, "key_id": keyID, "public_key_pem": publicKeyPEM, "client_ids": clientIDs,
        ])
    }

    /// One refresh token the sandbox should know, with its state (`valid` or `revoked`).
    public struct SeededToken: Sendable {
        public let token: String
        public let sub: String
        public let state: String
        public init(token: String, sub: String, state: String) {
            self.token = token
            self.sub = sub
            self.state = state
        }
    }

    /// Registers refresh tokens in batches of `batchSize`.
    /// - Parameter signedIn: the users signed in now: the sandbox signs their id_tokens at once
    ///   and hands them out in refresh answers within its reuse window (5 min by default), as
    ///   Apple signs one at sign-in; refresh answers then sign nothing on the request path.
    public func registerRefreshTokens(_ tokens: [SeededToken], teamID: String, clientID: String, batchSize: Int = 10_000,
                                      signedIn: Bool = false) async throws {
        var start = 0
        while start < tokens.count {
            let slice = tokens[start..<min(start + batchSize, tokens.count)]
            let entries: [[String: String]] = slice.map {
                ["token": $0.token, "team_id": teamID, "client_id": clientID, "sub": $0.sub, "state": $0.state]
            }
            _ = try await post("/__sandbox/refresh-tokens", ["tokens": entries, "sign_in": signedIn])
            start += batchSize
        }
    }

    /// Counts of registered refresh tokens by state for one team and client.
    public func truth(teamID: String, clientID: String) async throws -> (valid: Int, revoked: Int) {
        let query = "team_id=\(teamID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
            + "&client_id=\(clientID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
        let object = try await get("/__sandbox/truth?" + query)
        return ((object["valid"] as? Int) ?? -1, (object["revoked"] as? Int) ?? -1)
    }

    /// Makes the next `count` Apple-endpoint requests fail as `kind` (`429`, `500`, `503`, `html`,
    /// `reset`, `stall`, `truncated`, `invalid_client`); `retryAfter` in seconds for 429.
    public func scriptFault(_ kind: String, count: Int, retryAfter: Int? = nil) async throws {
        var body: [String: Any] = ["kind": kind, "next": count]
        if let retryAfter { body["retry_after"] = retryAfter }
        _ = try await post("/__sandbox/faults", body)
    }

    /// The sandbox's counters, as JSON.
    public func stats() async throws -> [String: Any] {
        try await get("/__sandbox/stats")
    }

    func post(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
        let data = try JSONSerialization.data(withJSONObject: body)
        let request = HTTPRequest(method: "POST", url: baseURL + path, headers: [("Content-Type", "application/json")],
                                  body: Array(data), timeout: .seconds(60))
        return try await send(request)
    }

    func get(_ path: String) async throws -> [String: Any] {
        try await send(HTTPRequest(method: "GET", url: baseURL + path, headers: [], body: [], timeout: .seconds(30)))
    }

    private func send(_ request: HTTPRequest) async throws -> [String: Any] {
        let response: HTTPResponse
        do {
            response = try await transport.send(request)
        } catch {
            throw SandboxAdminClientError(message: "sandbox at \(baseURL) unreachable: \(error)", unreachable: true)
        }
        guard (200..<300).contains(response.status) else {
            throw SandboxAdminClientError(message: "sandbox \(request.method) \(request.url) answered \(response.status): "
                + String(decoding: response.body.prefix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                + (response.status == 404 ? " (is the URL the sandbox's base URL, without a path?)" : ""))
        }
        guard !response.body.isEmpty else { return [:] }
        return (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:]
    }
}

public struct SandboxAdminClientError: Error, CustomStringConvertible, Sendable {
    public let message: String
    /// True when no answer came back at all (refused, reset, timed out, a TLS failure). Either
    /// way the CLI exits 69 (a service is unavailable), not 70.
    public var unreachable = false
    public var description: String { message }
}
