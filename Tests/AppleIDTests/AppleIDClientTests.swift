import Foundation
import Testing
@testable import AppleID
import SIWACrypto
import TestSupport

@Suite struct AppleIDClientTests {
    static func client(_ transport: ScriptedTransport, timeout: Duration = .seconds(15)) throws -> AppleIDClient {
        let provider = ClientSecretProvider(credentials: try Fixtures.credentials(), clock: ManualClock())
        return AppleIDClient(baseURL: "https://appleid.example/", transport: transport, secrets: provider, timeout: timeout)
    }

    static func reply(_ status: Int, _ body: String, contentType: String = "application/json;charset=UTF-8", headers: [(String, String)] = []) -> ScriptedTransport {
        ScriptedTransport(script: [.success(HTTPResponse(status: status, headers: [("Content-Type", contentType)] + headers, body: Array(body.utf8)))])
    }

    static func form(_ request: HTTPRequest) -> [String: String] {
        let pairs = FormEncoding.decode(String(decoding: request.body, as: UTF8.self)) ?? []
        return Dictionary(pairs, uniquingKeysWith: { first, _ in first })
    }

    @Test func refreshValidationRequestShape() async throws {
        let transport = Self.reply(200, #"{"access_token":"a.b","token_type":"Bearer","expires_in":3600,"id_token":"x.y.z"}"#)
        let client = try Self.client(transport, timeout: .seconds(2))
        let refreshToken = "r+/=& x.0.AbC"
        let response = try await client.validateRefreshToken(refreshToken)
        #expect(response == TokenResponse(accessToken: "a.b", tokenType: "Bearer", expiresIn: 3600, refreshToken: nil, idToken: "x.y.z"))
        let request = try #require(transport.requests.first)
        #expect(request.method == "POST")
        #expect(request.url == "https://appleid.example/auth/token")
        #expect(request.timeout == .seconds(10), "timeouts below 10 s are raised")
        #expect(request.header("content-type") == "application/x-www-form-urlencoded")
        #expect(request.header("authorization") == nil, "client_secret_post only")
        let body = String(decoding: request.body, as: UTF8.self)
        #expect(body.contains("refresh_token=r%2B%2F%3D%26%20x.0.AbC"))
        let form = Self.form(request)
        #expect(form["grant_type"] == "refresh_token")
        #expect(form["refresh_token"] == refreshToken)
        #expect(form["client_id"] == "com.example.app")
        let secret = try #require(form["client_secret"])
        #expect(try JWS.split(secret).signature.count == 64)
        #expect(form["code"] == nil)
    }

    @Test(arguments: [
        (#"{"access_token":"a","token_type":"BEARER","expires_in":"300"}"#, 300),
        (#"{"access_token":"a","token_type":"bearer","expires_in":3600.0}"#, 3600),
        (#"{"access_token":"a","expires_in":60}"#, 60),
        (#"{"access_token":"a","token_type":"Bearer"}"#, 3600),
    ])
    func lenientTokenResponses(_ body: String, _ expiresIn: Int) async throws {
        let response = try await Self.client(Self.reply(200, body)).validateRefreshToken("r")
        #expect(response.expiresIn == expiresIn)
        #expect(response.idToken == nil)
        #expect(response.refreshToken == nil)
    }

    /// A refresh validation's 200 is the verdict: without `access_token` the token is still valid,
    /// with a warning. A client-credentials token without one is useless, so it stays an error.
    @Test(arguments: [#"{"token_type":"Bearer","expires_in":3600}"#, #"{"access_token":"","token_type":"Bearer"}"#,
                      #"{"access_token":null,"id_token":"x.y.z"}"#])
    func refreshWithoutAccessTokenIsValidWithAWarning(_ body: String) async throws {
        let response = try await Self.client(Self.reply(200, body)).validateRefreshToken("r")
        #expect(response.accessToken.isEmpty)
        #expect(response.warnings == [TokenResponse.missingAccessTokenWarning])
        #expect(response.description.hasPrefix("TokenResponse(access_token: absent,"))
        let mint = await Self.failure(Self.reply(200, body)) { try await $0.clientCredentialsToken() }
        #expect(mint?.errorClass == .permanent && mint?.detail == "malformed success body: missing access_token")
        let full = try await Self.client(Self.reply(200, #"{"access_token":"a","token_type":"Bearer"}"#)).validateRefreshToken("r")
        #expect(full.warnings.isEmpty)
    }

    @Test(arguments: [
        (#"{"access_token":"a","token_type":"mac"}"#, "malformed success body: token_type is not bearer"),
        (#"{"access_token":"a","expires_in":"soon"}"#, "malformed success body: expires_in is not a non-negative integer"),
    ])
    func malformedSuccessIsPermanent(_ body: String, _ detail: String) async throws {
        let client = try Self.client(Self.reply(200, body))
        let error = await #expect(throws: AppleIDError.self, "accepted \(body)") { try await client.validateRefreshToken("r") }
        #expect(error?.errorClass == .permanent)
        #expect(error?.detail == detail)
        #expect(error?.httpStatus == 200)
    }

    @Test func htmlAndTruncatedSuccessBodiesAreTransient() async throws {
        let html = await Self.failure(Self.reply(200, "<html>oops</html>", contentType: "text/html")) { try await $0.validateRefreshToken("r") }
        #expect(html?.errorClass == .transient)
        #expect(html?.detail == "unparseable response body (text/html)")
        let truncated = await Self.failure(Self.reply(200, #"{"access_token":"a","tok"#)) { try await $0.validateRefreshToken("r") }
        #expect(truncated?.errorClass == .transient)
        let html502 = await Self.failure(Self.reply(502, "<html/>", contentType: "text/html", headers: [("Retry-After", "30")])) {
            try await $0.validateRefreshToken("r")
        }
        #expect(html502?.errorClass == .transient)
        #expect(html502?.retryAfter == .seconds(30))
    }

    @Test func appleErrorsAreClassifiedAndNeverLeakSecrets() async throws {
        let refreshToken = "rSECRET.0.tok"
        let invalidGrant = await Self.failure(Self.reply(400, #"{"error":"invalid_grant","error_description":"The token has expired or has been revoked."}"#)) {
            try await $0.validateRefreshToken(refreshToken)
        }
        let error = try #require(invalidGrant)
        #expect(error.errorClass == .permanent)
        #expect(error.appleError == "invalid_grant")
        #expect(error.detail == "invalid_grant: The token has expired or has been revoked.")
        #expect(!error.description.contains("SECRET"))
        let transport = Self.reply(400, #"{"error":"invalid_client"}"#)
        let client = try Self.client(transport)
        let invalidClient = await #expect(throws: AppleIDError.self) { try await client.validateRefreshToken(refreshToken) }
        #expect(invalidClient?.errorClass == .configuration)
        #expect(client.secrets.mintCount == 1)
        _ = try client.secrets.secret()
        #expect(client.secrets.mintCount == 2, "invalid_client drops the cached secret")
    }

    @Test(arguments: [TransportError.Kind.timeout, .connectionFailed, .connectionReset, .cancelled, .other])
    func transportFailuresAreTransient(_ kind: TransportError.Kind) async throws {
        let transport = ScriptedTransport(script: [.failure(TransportError(kind: kind, message: "curl error"))])
        let error = try #require(await Self.failure(transport) { try await $0.validateRefreshToken("r") })
        #expect(error.errorClass == .transient)
        #expect(error.transportKind == kind)
        #expect(error.httpStatus == nil && error.appleError == nil)
        #expect(error.isCancellation == (kind == .cancelled))
    }

    @Test func revokeSemantics() async throws {
        let transport = Self.reply(200, "")
        try await Self.client(transport).revoke(token: "t o+k", hint: "refresh_token")
        let request = try #require(transport.requests.first)
        #expect(request.url == "https://appleid.example/auth/revoke")
        #expect(Self.form(request)["token"] == "t o+k")
        #expect(Self.form(request)["token_type_hint"] == "refresh_token")
        try await Self.client(Self.reply(200, "{}")).revoke(token: "t", hint: "access_token")
        let html = await Self.failure(Self.reply(200, "<html/>", contentType: "text/html")) { try await $0.revoke(token: "t", hint: "access_token") }
        #expect(html?.errorClass == .transient)
        let badHint = ScriptedTransport(script: [])
        let hint = await Self.failure(badHint) { try await $0.revoke(token: "t", hint: "id_token") }
        #expect(hint?.errorClass == .configuration)
        #expect(badHint.requests.isEmpty)
        let invalid = await Self.failure(Self.reply(400, #"{"error":"invalid_request"}"#)) { try await $0.revoke(token: "t", hint: "refresh_token") }
        #expect(invalid?.errorClass == .permanent)
    }

    @Test func clientCredentialsRequest() async throws {
        let transport = Self.reply(200, #"{"access_token":"beg5105.0.nx.20L","token_type":"Bearer","expires_in":3600}"#)
        let token = try await Self.client(transport).clientCredentialsToken(scope: "user.migration")
        #expect(token.accessToken == "beg5105.0.nx.20L")
        let form = Self.form(try #require(transport.requests.first))
        #expect(form["grant_type"] == "client_credentials")
        #expect(form["scope"] == "user.migration")
        #expect(!token.description.contains("beg5105"))
        let scope = await Self.failure(Self.reply(400, #"{"error":"invalid_scope"}"#)) { try await $0.clientCredentialsToken(scope: "x") }
        #expect(scope?.errorClass == .configuration)
    }

    @Test func senderExchange() async throws {
        let transport = Self.reply(200, #"{"transfer_sub":"760417.ebbf12acbc78e1be1668ba852d492d8a.1827"}"#)
        let transferSub = try await Self.client(transport).exchangeSub("000723.25da.0402", target: "XYZ987TEAM", accessToken: "acc+tok")
        #expect(transferSub == "760417.ebbf12acbc78e1be1668ba852d492d8a.1827")
        let request = try #require(transport.requests.first)
        #expect(request.url == "https://appleid.example/auth/usermigrationinfo")
        #expect(request.header("Authorization") == "Bearer acc+tok")
        let form = Self.form(request)
        #expect(form["sub"] == "000723.25da.0402" && form["target"] == "XYZ987TEAM")
        #expect(form["client_secret"] != nil)
        let missing = await Self.failure(Self.reply(200, "{}")) { try await $0.exchangeSub("s", target: "T", accessToken: "a") }
        #expect(missing?.detail == "malformed success body: missing transfer_sub")
    }

    @Test(arguments: [
        (#"{"sub":"820417.faa3.0219","email":"ep9@privaterelay.appleid.com","is_private_email":true}"#, true as Bool?, "ep9@privaterelay.appleid.com" as String?),
        (#"{"sub":"820417.faa3.0219","email":"ep9@privaterelay.appleid.com","is_private_email":"true"}"#, true, "ep9@privaterelay.appleid.com"),
        (#"{"sub":"820417.faa3.0219","is_private_email":"false"}"#, false, nil),
        (#"{"sub":"820417.faa3.0219","is_private_email":0}"#, false, nil),
        (#"{"sub":"820417.faa3.0219","email":""}"#, nil, nil),
    ])
    func recipientExchange(_ body: String, _ isPrivate: Bool?, _ email: String?) async throws {
        let transport = Self.reply(200, body)
        let user = try await Self.client(transport).exchangeTransferSub("760417.ebbf.1827", accessToken: "a")
        #expect(user == MigratedUser(sub: "820417.faa3.0219", email: email, isPrivateEmail: isPrivate))
        #expect(Self.form(try #require(transport.requests.first))["transfer_sub"] == "760417.ebbf.1827")
    }

    @Test func fetchKeys() async throws {
        let jwks = #"{"keys":[{"kty":"RSA","kid":"AIDOPK1","use":"sig","alg":"RS256","n":"x","e":"AQAB"}]}"#
        let transport = Self.reply(200, jwks)
        #expect(try await Self.client(transport).fetchKeys() == Array(jwks.utf8))
        let request = try #require(transport.requests.first)
        #expect(request.method == "GET" && request.url == "https://appleid.example/auth/keys")
        #expect(request.body.isEmpty)
        let html = await Self.failure(Self.reply(200, "<html/>", contentType: "text/html")) { try await $0.fetchKeys() }
        #expect(html?.errorClass == .transient)
    }

    /// The error a call on a client over `transport` throws; records an issue (and returns nil)
    /// if the call returned instead.
    static func failure<T>(_ transport: ScriptedTransport, _ call: (AppleIDClient) async throws -> T,
                           sourceLocation: SourceLocation = #_sourceLocation) async -> AppleIDError? {
        do {
            _ = try await call(try client(transport))
        } catch let error as AppleIDError {
            return error
        } catch {
            Issue.record(error, sourceLocation: sourceLocation)
            return nil
        }
        Issue.record("the call returned instead of throwing AppleIDError", sourceLocation: sourceLocation)
        return nil
    }
}
