import AppleID
import Foundation
import Postgres
import Sandbox
import SIWACrypto
import SIWAJobs

/// A `SIWAWorld` with a long-running `siwa-jobs work` process: users are authorized by the
/// sandbox over HTTP (`POST /__sandbox/authorize` plays the device), the app side submits their
/// identity tokens and codes through PostgreSQL (`siwa.submit_sign_in`), and the worker writes
/// the outcomes back into `siwa.sign_ins`.
struct SignInWorld {
    var world: SIWAWorld
    let worker: BinaryProcess

    /// What the device handed the app for one user.
    struct Authorized: Sendable {
        let token: String
        let code: String
        let sub: String
        let nonce: String?
    }

    static func create() async throws -> SignInWorld {
        let world = try await SIWAWorld.create()
        var env = world.environment
        env["SIWA_JWKS_REFETCH_SECONDS"] = "1"
        let worker = try BinaryProcess(["work", "--concurrency", "64", "--pool-size", "8", "--poll-seconds", "1"], environment: env)
        return SignInWorld(world: world, worker: worker)
    }

    var database: TestDatabase { world.database }
    var sandbox: SandboxServer { world.sandbox }
    /// `/auth/token` requests the sandbox answered since its last reset.
    var tokenCalls: Int { sandbox.model.stats().requests["/auth/token"] ?? 0 }

    /// Authorizes one user through the admin endpoint; `fields` go into the JSON body beside
    /// team and client (e.g. `"nonce"`, `"sub"`, `"aud"`).
    func authorize(_ fields: [String: Any] = [:]) async throws -> Authorized {
        var body: [String: Any] = ["team_id": SIWAWorld.teamID, "client_id": SIWAWorld.clientID]
        body.merge(fields) { $1 }
        return try await Self.authorize(base: sandbox.baseURL, body: try JSONSerialization.data(withJSONObject: body),
                                        nonce: fields["nonce"] as? String, transport: CurlTransport(maxConnectionsPerHost: 1, caBundlePath: sandbox.caFile))
    }

    static func authorize(base: String, body: Data, nonce: String?, transport: CurlTransport) async throws -> Authorized {
        let request = HTTPRequest(method: "POST", url: base + "/__sandbox/authorize", headers: [("Content-Type", "application/json")],
                                  body: Array(body), timeout: .seconds(30))
        let response = try await transport.send(request)
        guard response.status == 200, let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
              let token = object["identity_token"] as? String, let code = object["code"] as? String, let sub = object["sub"] as? String
        else { throw TestFailure("authorize answered \(response.status): \(String(decoding: response.body, as: UTF8.self))") }
        return Authorized(token: token, code: code, sub: sub, nonce: nonce)
    }

    /// `count` new users, each with its own nonce, authorized 8 at a time.
    func authorizeUsers(_ count: Int) async throws -> [Authorized] {
        let transport = CurlTransport(maxConnectionsPerHost: 8, caBundlePath: sandbox.caFile)
        let base = sandbox.baseURL
        @Sendable func one(_ i: Int) async throws -> (Int, Authorized) {
            let nonce = "nonce-\(i)-\(UUID().uuidString)"
            let body = try JSONSerialization.data(withJSONObject: ["team_id": SIWAWorld.teamID, "client_id": SIWAWorld.clientID,
                                                                   "nonce": nonce])
            return (i, try await Self.authorize(base: base, body: body, nonce: nonce, transport: transport))
        }
        return try await withThrowingTaskGroup(of: (Int, Authorized).self) { group in
            var out = [Authorized?](repeating: nil, count: count)
            var next = 0
            while next < min(8, count) {
                let i = next
                group.addTask { try await one(i) }
                next += 1
            }
            while let (i, user) = try await group.next() {
                out[i] = user
                if next < count {
                    let j = next
                    group.addTask { try await one(j) }
                    next += 1
                }
            }
            return out.compactMap { $0 }
        }
    }

    /// Submits as an app backend does: `SELECT siwa.submit_sign_in(...)`. Returns the sign-in id.
    func submit(_ user: Authorized, nonce: String? = nil, nonceSHA256: String? = nil, token: String? = nil,
                externalUserID: String? = nil, name: String? = nil, email: String? = nil) async throws -> Int64 {
        try await database.scalar("""
            SELECT siwa.submit_sign_in(\(SIWAWorld.teamID), \(SIWAWorld.clientID), \(token ?? user.token), \(user.code),
                                       p_nonce => \(nonceSHA256 == nil ? (nonce ?? user.nonce) : nil), p_nonce_sha256 => \(nonceSHA256),
                                       p_name => \(name), p_email => \(email), p_external_user_id => \(externalUserID))
            """)
    }

    /// Waits until every sign-in in `ids` has an outcome; returns `id -> outcome_text`.
    func outcomes(_ ids: [Int64]) async throws -> [Int64: String] {
        try await Eventually.wait("\(ids.count) sign-in outcomes", while: worker) {
            try await database.scalar("""
                SELECT count(*)::int FROM siwa.sign_ins WHERE id = ANY(\(ids)) AND processed_at IS NOT NULL
                """, as: Int.self) == ids.count
        }
        let rows = try await database.pool.query("SELECT id, outcome_text FROM siwa.sign_in_outcomes WHERE id = ANY(\(ids))")
        var map: [Int64: String] = [:]
        for row in rows { map[try row.decode("id")] = try row.decode("outcome_text") }
        return map
    }

    func tearDown() async {
        worker.signal(SIGTERM)
        _ = await worker.wait(timeout: .seconds(60))
        await world.tearDown()
    }
}
