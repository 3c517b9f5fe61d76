import AppleID

/// JWKS sources for the verifier (apple-api.md §6).
public enum JWKSProviders {
    /// `GET {baseURL}/auth/keys` through the app's Apple client (`SIWA_APPLE_BASE_URL`: Apple or
    /// the sandbox). Throws `JWKSError` field `fetch` carrying the classified `AppleIDError`'s
    /// description (at most 200 characters) on failure.
    public static func apple(_ client: AppleIDClient) -> HTTPJWKSProvider {
        HTTPJWKSProvider { () async throws(JWKSError) -> [UInt8] in
            do {
                return try await client.fetchKeys()
            } catch {
                throw JWKSError(field: "fetch", message: String(String(describing: error).prefix(200)))
            }
        }
    }

    /// `GET url` for any JWKS URL (`token verify --jwks URL`). Throws `JWKSError` field `fetch` on
    /// a transport error or a non-2xx status.
    public static func url(_ url: String, transport: any HTTPTransport) -> HTTPJWKSProvider {
        HTTPJWKSProvider { () async throws(JWKSError) -> [UInt8] in
            let response: HTTPResponse
            do {
                response = try await transport.send(HTTPRequest(method: "GET", url: url, headers: [("Accept", "application/json")],
                                                                timeout: .seconds(15)))
            } catch {
                throw JWKSError(field: "fetch", message: "GET \(url) failed: \(error)")
            }
            guard (200..<300).contains(response.status) else {
                throw JWKSError(field: "fetch", message: "GET \(url) answered HTTP \(response.status)")
            }
            return response.body
        }
    }
}
