import Postgres

extension Enqueuer {
    /// A team or client without any account at all is most likely a typo: it is named with what
    /// is known (one index probe; then loose index scans over `siwa.accounts`' unique keys).
    /// - Throws: `EnqueueError` `.likelyTypo`; nothing when the team and client have accounts.
    func requireKnownTarget(teamID: String, clientID: String) async throws {
        let known = try await pool.query("""
            SELECT EXISTS (SELECT 1 FROM siwa.accounts WHERE team_id = \(teamID) AND client_id = \(clientID)) AS known
            """)
        guard try known.first?.decode("known", as: Bool.self) == false else { return }
        let rows = try await pool.query("""
            SELECT ARRAY(WITH RECURSIVE c AS (
                             (SELECT client_id FROM siwa.accounts WHERE team_id = \(teamID) ORDER BY client_id LIMIT 1)
                             UNION ALL
                             SELECT (SELECT a.client_id FROM siwa.accounts a WHERE a.team_id = \(teamID) AND a.client_id > c.client_id
                                     ORDER BY a.client_id LIMIT 1)
                             FROM c WHERE c.client_id IS NOT NULL)
                         SELECT client_id FROM c WHERE client_id IS NOT NULL LIMIT \(Self.namesShown)) AS clients,
                   ARRAY(WITH RECURSIVE t AS (
                             (SELECT team_id FROM siwa.accounts ORDER BY team_id LIMIT 1)
                             UNION ALL
                             SELECT (SELECT a.team_id FROM siwa.accounts a WHERE a.team_id > t.team_id ORDER BY a.team_id LIMIT 1)
                             FROM t WHERE t.team_id IS NOT NULL)
                         SELECT team_id FROM t WHERE team_id IS NOT NULL LIMIT \(Self.namesShown)) AS teams
            """)
        guard let row = rows.first else { return }
        let clients = try row.decode("clients", as: [String].self)
        let teams = try row.decode("teams", as: [String].self)
        if clients.isEmpty {
            let known = teams.isEmpty ? "siwa.accounts is empty" : "teams with accounts: \(Self.list(teams))"
            throw EnqueueError(message: "team '\(teamID)' has no account at all: likely a typo in --team-id or SIWA_TEAM_ID "
                + "(\(known)); no job was created", reason: .likelyTypo)
        }
        throw EnqueueError(message: "team \(teamID) has no account for client '\(IdentifierFormat.printable(clientID))' at all: "
            + "likely a typo in --client-id "
            + "or SIWA_CLIENT_ID (this team's clients: \(Self.list(clients))); no job was created", reason: .likelyTypo)
    }

    /// Names listed in a typo message: at most 5, then `...`.
    static let namesShown = 6

    private static func list(_ names: [String]) -> String {
        names.prefix(namesShown - 1).joined(separator: ", ") + (names.count >= namesShown ? ", ..." : "")
    }
}

/// Transaction-scoped advisory locks that serialise planners of one team and client (e.g. two
/// `transfer import-csv` runs of one file), released at commit or rollback. The two-key form
/// (`SIWA` class, `hashtext(key)`) never meets the migration lock, which uses the one-key form.
enum PlanLock {
    static let classID: Int32 = 0x5349_5741   // "SIWA"

    /// The lock of transfer imports into `teamID`/`clientID`.
    static func transferImport(teamID: String, clientID: String) -> String { "transfer-import:\(teamID):\(clientID)" }

    /// Waits for the lock named `key` in the transaction of `tx`.
    static func take(_ key: String, _ tx: PostgresConnection) async throws {
        _ = try await tx.query("SELECT pg_advisory_xact_lock(\(classID)::int, hashtext(\(key)))")
    }
}
