import AppleID
import Foundation
import Postgres
import Sandbox
import SIWACrypto
import SIWAJobs

/// A `SIWAWorld` plus a real `siwa-jobs notifications serve` process: notifications are signed
/// by the in-process sandbox and POSTed over HTTP to the receiver.
struct NotificationWorld {
    var world: SIWAWorld
    let receiver: BinaryProcess
    let receiverURL: String

    /// - Parameters:
    ///   - serveArguments: extra `notifications serve` arguments.
    ///   - databasePort: the receiver reaches PostgreSQL at 127.0.0.1 on this port (e.g. a proxy).
    static func create(accounts: Int, serveArguments: [String] = [], databasePort: UInt16? = nil) async throws -> NotificationWorld {
        var world = try await SIWAWorld.create()
        if accounts > 0 { try await world.seed(accounts: accounts, revokedFraction: 0) }
        var env = world.environment
        if let databasePort {
            env["PGHOST"] = "127.0.0.1"
            env["PGPORT"] = String(databasePort)
        }
        let receiver = try BinaryProcess(["notifications", "serve", "--port", "0"] + serveArguments, environment: env)
        var url: String?
        for _ in 0..<500 where url == nil {
            if let line = receiver.stdout.split(separator: "\n").first(where: { $0.contains("listening on ") }) {
                url = line.components(separatedBy: "listening on ").last.map { $0.trimmingCharacters(in: .whitespaces) + "/" }
            } else if !receiver.process.isRunning {
                break
            } else {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        guard let url else { throw TestFailure("receiver did not start: \(receiver.stderr.suffix(1000))") }
        return NotificationWorld(world: world, receiver: receiver, receiverURL: url)
    }

    var database: TestDatabase { world.database }
    var sandbox: SandboxServer { world.sandbox }
    var admin: SandboxAdminClient { world.admin }
    var subs: [String] { world.seeded?.tokens.map(\.sub) ?? [] }

    /// Worker environment: refetch limit lowered so tests need not wait a minute.
    func environment(refetchSeconds: Int = 1) -> [String: String] {
        var env = world.environment
        env["SIWA_JWKS_REFETCH_SECONDS"] = String(refetchSeconds)
        return env
    }

    func sign(_ specs: [NotificationSpec]) throws -> [String] {
        try sandbox.signNotifications(specs)
    }

    /// POSTs every payload; returns the HTTP statuses.
    func post(_ payloads: [String], concurrency: Int = 8) async -> [Int: Int] {
        await NotificationSender(url: receiverURL, transport: CurlTransport(maxConnectionsPerHost: 16))
            .send(payloads, concurrency: concurrency)
    }

    func postRaw(_ body: [UInt8], method: String = "POST") async throws -> Int {
        try await request(method, body: body).status
    }

    /// One request to the receiver; `path` is relative to its root, e.g. `readyz`.
    func request(_ method: String, path: String = "", contentType: String? = "application/json",
                 body: [UInt8] = []) async throws -> (status: Int, body: String) {
        let request = HTTPRequest(method: method, url: receiverURL + path, headers: contentType.map { [("Content-Type", $0)] } ?? [],
                                  body: body, timeout: .seconds(30))
        let response = try await CurlTransport(maxConnectionsPerHost: 1).send(request)
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    /// `request` as `<status> <body>`, e.g. `200 {"status":"stored"}`.
    func answer(_ method: String, path: String = "", contentType: String? = "application/json",
                body: [UInt8] = []) async throws -> String {
        let answer = try await request(method, path: path, contentType: contentType, body: body)
        return "\(answer.status) \(answer.body)"
    }

    /// POSTs `{"payload": payload}` as JSON; returns `<status> <body>`.
    func postPayload(_ payload: String) async throws -> String {
        try await answer("POST", body: Array(try JSONSerialization.data(withJSONObject: ["payload": payload])))
    }

    /// Polls `sql` (one integer) until it is at least `target`.
    /// - Throws: `TestFailure` naming the target after 60 s.
    func waitFor(_ sql: SQL, atLeast target: Int) async throws {
        try await Eventually.wait("\(target) or more from a polled query", timeout: .seconds(60)) {
            try await database.scalar(sql, as: Int.self) >= target
        }
    }

    func processedCount() async throws -> Int {
        try await database.scalar("SELECT count(*)::int FROM siwa.notifications WHERE processed_at IS NOT NULL")
    }

    /// `/auth/keys` requests the sandbox answered.
    var jwksFetches: Int { sandbox.model.stats().requests["/auth/keys"] ?? 0 }

    func tearDown() async {
        receiver.signal(SIGTERM)
        _ = await receiver.wait()
        await world.tearDown()
    }

    /// True when `haystack` holds none of the seeded refresh tokens. Every seeded token contains
    /// the marker `.0.mrq` (see `Seeder.makeRefreshToken`), so one linear scan for it is a complete
    /// check; a sample is also searched in full.
    func holdsNoRefreshToken(_ haystack: String) -> Bool {
        let tokens = world.seeded?.tokens.map(\.token) ?? []
        return !haystack.contains(".0.mrq") && !tokens.prefix(20).contains { haystack.contains($0) }
    }

    /// Everything a secret must never reach: process output, results, audit rows and every view.
    func haystack(extra: [BinaryProcess]) async throws -> String {
        var text = receiver.stdout + receiver.stderr
        for p in extra { text += p.stdout + p.stderr }
        for table in ["siwa.results", "siwa.audit_log", "siwa.job_progress", "siwa.job_outcomes", "siwa.token_health",
                      "siwa.account_summary", "siwa.notification_summary", "siwa.accounts_to_delete"] {
            let rows = try await database.pool.withConnection { conn in
                try await conn.query(SQL(unsafeSQL: "SELECT t::text AS row FROM \(table) t"))
            }
            for row in rows { text += try row.decode("row", as: String.self) + "\n" }
        }
        return text
    }
}

/// Forged tokens for rejection tests.
enum Forge {
    /// Claims of a notification valid now for `clientID`.
    static func claims(sub: String, clientID: String, jti: String = UUID().uuidString) -> String {
        let now = Int(Date().timeIntervalSince1970)
        let events = #"{"type":"consent-revoked","sub":"\#(sub)","event_time":\#(now)}"#
        return #"{"iss":"https://appleid.apple.com","aud":"\#(clientID)","iat":\#(now),"exp":\#(now + 300),"jti":"\#(jti)","events":\#(quoted(events))}"#
    }

    static func quoted(_ s: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: [s])) ?? Data("[\"\"]".utf8)
        return String(String(decoding: data, as: UTF8.self).dropFirst().dropLast())
    }

    static func token(header: String, claims: String, sign: ([UInt8]) throws -> [UInt8]) rethrows -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(try sign(Array(input.utf8)))
    }

    /// HMAC-SHA256 (RFC 2104) from `Digest.sha256`, to forge HS256 tokens.
    static func hmac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? Digest.sha256(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = Digest.sha256(block.map { $0 ^ 0x36 } + message)
        return Digest.sha256(block.map { $0 ^ 0x5C } + inner)
    }
}
