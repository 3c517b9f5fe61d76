import SIWACrypto

/// The sandbox's app-transfer world (apple-api.md §4): users per team and client, app-transfer
/// records, issued transfer identifiers and a clock offset. Held by `SandboxModel.migration`.
///
/// Identity model: every registered user has a team-independent `appleUserID` (given, or derived
/// from team and sub). Everything the recipient sees is a pure function of that identity and the
/// recipient team, so it is deterministic and reproducible in tests:
/// - `transfer_sub` per (user, recipient team), the same for every app moved to that team;
/// - the recipient team-scoped `sub` per (user, recipient team);
/// - the recipient team's private relay address per (user, recipient team).
struct MigrationRegistry {
    struct User {
        var appleUserID: String
        /// The user chose Hide My Email for this app.
        var privateEmail: Bool
        /// The user revoked Sign in with Apple for this app.
        var revoked: Bool
        /// Apple answers `invalid_grant` for this user alone, whatever the bearer (a per-user
        /// fault seen in public bug reports; issue 8 §10).
        var grantRefused = false
    }

    /// An app moved from one team to another; the migration window runs 60 days from `at`.
    struct AppTransfer {
        var clientID: String
        var fromTeamID: String
        var toTeamID: String
        /// Seconds since 1970.
        var at: Double
    }

    /// A `transfer_sub` handed to a sending team.
    struct Issued {
        var userKey: String
        var fromTeamID: String
        var toTeamID: String
        var clientID: String
    }

    /// Users by `userKey(team, client, sub)`.
    var users: [String: User] = [:]
    /// Transfers by `transferKey(client, from, to)`.
    var transfers: [String: AppTransfer] = [:]
    /// Issued transfer identifiers by value.
    var issued: [String: Issued] = [:]
    /// Seconds added to the wall clock for bearer expiry and the window (tests move time forward).
    var clockOffset: Double = 0

    /// The migration window after the transfer date, seconds (60 days; TN3159).
    static let windowSeconds: Double = 60 * 86_400

    static func userKey(_ team: String, _ client: String, _ sub: String) -> String {
        team + "\u{1F}" + client + "\u{1F}" + sub
    }

    static func transferKey(_ client: String, _ from: String, _ to: String) -> String {
        client + "\u{1F}" + from + "\u{1F}" + to
    }
}

/// Deterministic identifiers in Apple's shapes, derived with SHA-256 from a purpose, the user's
/// identity and a team.
enum MigrationDerivation {
    private static func digest(_ purpose: String, _ user: String, _ team: String) -> [UInt8] {
        Digest.sha256(Array((purpose + "\u{1F}" + user + "\u{1F}" + team).utf8))
    }

    private static func hex(_ bytes: ArraySlice<UInt8>) -> String { Hex.encode(bytes) }

    private static func decimal(_ bytes: ArraySlice<UInt8>, width: Int) -> String {
        var n: UInt64 = 0
        for b in bytes { n = n &* 256 &+ UInt64(b) }
        var modulus: UInt64 = 1
        for _ in 0..<width { modulus *= 10 }
        let text = String(n % modulus)
        return String(repeating: "0", count: width - text.count) + text
    }

    /// `NNNNNN.<32 hex>.NNNN`, like Apple's `760417.ebbf12acbc78e1be1668ba852d492d8a.1827`.
    private static func appleShaped(_ d: [UInt8]) -> String {
        decimal(d[0..<4], width: 6) + "." + hex(d[4..<20]) + "." + decimal(d[20..<24], width: 4)
    }

    static func transferSub(user: String, recipient: String) -> String {
        appleShaped(digest("transfer_sub", user, recipient))
    }

    static func sub(user: String, team: String) -> String {
        appleShaped(digest("sub", user, team))
    }

    /// A team-specific Hide My Email address.
    static func relayEmail(user: String, team: String) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        let d = digest("relay", user, team)
        let local = d[0..<10].map { alphabet[Int($0) % alphabet.count] }
        return String(decoding: local, as: UTF8.self) + "@privaterelay.appleid.com"
    }

    /// Whether the sandbox sends `is_private_email` as the string `"true"` rather than a JSON bool
    /// for this user (Apple sends both shapes; apple-api.md §0 #4). Deterministic, about half.
    static func stringBoolean(user: String, team: String) -> Bool {
        digest("bool-shape", user, team)[0] & 1 == 1
    }
}
