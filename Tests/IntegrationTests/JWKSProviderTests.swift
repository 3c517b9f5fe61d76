import AppleID
import Foundation
import Sandbox
import SIWACrypto
import Testing
@testable import SIWAJobs

/// The HTTP JWKS providers the binary wires (`JWKSProviders.apple` for the worker and receiver,
/// `JWKSProviders.url` for `token verify --jwks URL`), against the sandbox's `/auth/keys` over real
/// HTTP: each fetch is a request the server answers, so a rotation shows up on the next fetch.
@Suite(.serialized, .timeLimit(.minutes(5))) struct JWKSProviderTests {
    @Test func httpProvidersFetchTheServedJWKSOverHTTP() async throws {
        let sandbox = SandboxServer(configuration: SandboxConfiguration())
        try sandbox.start()
        defer { sandbox.stop() }
        let transport = CurlTransport(maxConnectionsPerHost: 2)
        defer { transport.shutdown() }
        let credentials = try AppleCredentials(teamID: "TEAMA12345", keyID: "KEYA123456", clientID: "com.example.app",
                                               privateKey: try P256PrivateKey.generate())
        let client = AppleIDClient(baseURL: sandbox.baseURL, transport: transport,
                                   secrets: ClientSecretProvider(credentials: credentials))
        let apple = JWKSProviders.apple(client)
        let url = JWKSProviders.url(sandbox.baseURL + "/auth/keys", transport: transport)
        let first = sandbox.publishedKIDs
        #expect(first.count == 1)
        #expect(try JWKSet.parse(try await apple.fetch()).kids == first)
        #expect(try JWKSet.parse(try await url.fetch()).kids == first)
        // What is served now, not what was fetched before: a rotated key is in the next fetch.
        let next = try sandbox.rotateKeys()
        #expect(try JWKSet.parse(try await apple.fetch()).kids == [next] + first)
        #expect(try JWKSet.parse(try await url.fetch()).kids == [next] + first)
        #expect(sandbox.model.stats().requests["/auth/keys"] == 4, "every fetch is a GET the sandbox answered")

        // Failures are JWKSError field `fetch`, naming what went wrong.
        let missing = JWKSProviders.url(sandbox.baseURL + "/auth/nokeys", transport: transport)
        await #expect(throws: JWKSError(field: "fetch", message: "GET \(sandbox.baseURL)/auth/nokeys answered HTTP 404")) {
            _ = try await missing.fetch()
        }
        let port = sandbox.port
        sandbox.stop()
        let unreachable = JWKSProviders.apple(AppleIDClient(baseURL: "http://127.0.0.1:\(port)", transport: transport,
                                                            secrets: ClientSecretProvider(credentials: credentials)))
        let error = await #expect(throws: JWKSError.self) { _ = try await unreachable.fetch() }
        #expect(error?.field == "fetch")
    }
}
