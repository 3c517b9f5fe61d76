import Foundation
import Postgres
import Sandbox
import SIWACrypto

/// Accounts to import: app user ids, Apple-shaped subs and refresh tokens that all carry the
/// marker `.0.imp.`, so one scan for the marker finds any imported token anywhere.
struct ImportAccount {
    static let tokenMarker = ".0.imp."

    let user: String
    let sub: String
    var token: String
    var email: String
    let privateEmail: Bool

    static func make(_ count: Int, prefix: String = "app-user") -> [ImportAccount] {
        (1...count).map { i in
            ImportAccount(user: "\(prefix)-\(i)", sub: "001\(i).\(Hex.encode(SecureRandom.bytes(16))).\(1000 + i)",
                          token: newToken(), email: i % 2 == 0 ? "u\(i)@privaterelay.appleid.com" : "person\(i)@example.com",
                          privateEmail: i % 2 == 0)
        }
    }

    static func newToken() -> String {
        "r\(Hex.encode(SecureRandom.bytes(16)))\(tokenMarker)\(Base64URL.encode(SecureRandom.bytes(18)))"
    }

    var csvLine: String { "\(user),\(sub),\(token),\(email),\(privateEmail)" }

    static let header = "external_user_id,sub,refresh_token,email,is_private_email"

    static func csv(_ accounts: [ImportAccount]) -> String {
        ([header] + accounts.map(\.csvLine)).joined(separator: "\n") + "\n"
    }

    /// Registers the tokens with the sandbox, so a validation finds them valid.
    static func register(_ accounts: [ImportAccount], in sandbox: SandboxServer) {
        sandbox.model.registerRefreshTokens(accounts.map {
            SandboxRefreshToken(token: $0.token, teamID: SIWAWorld.teamID, clientID: SIWAWorld.clientID, sub: $0.sub)
        })
    }
}

extension SIWAWorld {
    /// Writes `text` to a file in the world's directory; returns its path.
    func write(_ text: String, name: String) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    func run(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await BinaryProcess.run(arguments, environment: environment.merging(extra) { $1 })
    }

    /// Every row of every table and view of schema `siwa`, as text.
    func dumpSchema() async throws -> String {
        let tables = try await database.pool.query("""
            SELECT table_name FROM information_schema.tables WHERE table_schema = 'siwa' ORDER BY 1
            """)
        var text = ""
        for table in tables {
            let name: String = try table.decode("table_name")
            let rows = try await database.pool.query(SQL(unsafeSQL: "SELECT t::text AS row FROM siwa.\(name) t"))
            for row in rows { text += try row.decode("row", as: String.self) + "\n" }
        }
        return text
    }
}
