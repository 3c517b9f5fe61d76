/// One user of one team and client, as registered for app-transfer tests.
public struct SandboxMigrationUser: Sendable, Equatable {
    public var teamID: String
    public var clientID: String
    /// The team-scoped user identifier the sending team stores.
    public var sub: String
    /// The user chose Hide My Email (a private relay address) for this app.
    public var privateEmail: Bool
    /// The user revoked Sign in with Apple for this app (Apple then answers `invalid_request`).
    public var revoked: Bool
    /// Team-independent identity; defaults to `team/sub`.
    public var appleUserID: String?
    /// Apple answers `invalid_grant` for this user alone (export and import), while other users'
    /// calls with the same bearer succeed.
    public var grantRefused: Bool

    public init(teamID: String, clientID: String, sub: String, privateEmail: Bool, revoked: Bool = false,
                appleUserID: String? = nil, grantRefused: Bool = false) {
        self.teamID = teamID
        self.clientID = clientID
        self.sub = sub
        self.privateEmail = privateEmail
        self.revoked = revoked
        self.appleUserID = appleUserID
        self.grantRefused = grantRefused
    }
}

/// What the recipient team must end up with for one sending-team user (the sandbox's ground truth).
public struct SandboxMigrationTruth: Sendable, Equatable, Encodable {
    /// The sending team's `sub`.
    public var sub: String
    public var revoked: Bool
    public var privateEmail: Bool
    /// The identifier the sending team receives for the recipient team.
    public var transferSub: String
    /// The recipient team-scoped `sub`.
    public var newSub: String
    /// The recipient team's relay address; nil for users on a real email (Apple does not return it).
    public var newEmail: String?

    enum CodingKeys: String, CodingKey {
        case sub, revoked
        case privateEmail = "private_email"
        case transferSub = "transfer_sub"
        case newSub = "new_sub"
        case newEmail = "new_email"
    }
}

extension SandboxModel {
    /// Registers (or replaces) users of teams and clients for `/auth/usermigrationinfo`.
    public func registerMigrationUsers(_ users: [SandboxMigrationUser]) {
        migration.withLock { reg in
            reg.users.reserveCapacity(reg.users.count + users.count)
            for u in users {
                reg.users[MigrationRegistry.userKey(u.teamID, u.clientID, u.sub)] = MigrationRegistry.User(
                    appleUserID: u.appleUserID ?? (u.teamID + "/" + u.sub), privateEmail: u.privateEmail, revoked: u.revoked,
                    grantRefused: u.grantRefused)
            }
        }
    }

    /// Makes Apple answer `invalid_grant` for a registered user alone (or not). Returns false when
    /// the user is unknown.
    @discardableResult
    public func setMigrationUserGrantRefused(teamID: String, clientID: String, sub: String, refused: Bool) -> Bool {
        updateMigrationUser(teamID, clientID, sub) { $0.grantRefused = refused }
    }

    /// Marks a registered user revoked (or not). Returns false when the user is unknown.
    @discardableResult
    public func setMigrationUserRevoked(teamID: String, clientID: String, sub: String, revoked: Bool) -> Bool {
        updateMigrationUser(teamID, clientID, sub) { $0.revoked = revoked }
    }

    private func updateMigrationUser(_ teamID: String, _ clientID: String, _ sub: String,
                                     _ change: (inout MigrationRegistry.User) -> Void) -> Bool {
        migration.withLock { reg in
            let key = MigrationRegistry.userKey(teamID, clientID, sub)
            guard var user = reg.users[key] else { return false }
            change(&user)
            reg.users[key] = user
            return true
        }
    }

    /// Records that `clientID` moved from `fromTeamID` to `toTeamID` at `at` (seconds since 1970).
    /// The migration endpoint serves this transfer until `at` + 60 days (sandbox clock).
    public func recordAppTransfer(clientID: String, fromTeamID: String, toTeamID: String, at: Double) {
        migration.withLock { reg in
            reg.transfers[MigrationRegistry.transferKey(clientID, fromTeamID, toTeamID)] = MigrationRegistry.AppTransfer(
                clientID: clientID, fromTeamID: fromTeamID, toTeamID: toTeamID, at: at)
        }
    }

    /// Seconds added to the wall clock for bearer tokens (minted and checked) and the
    /// 60-day window (client secrets are still checked against the wall clock). Starts at 0.
    public var clockOffset: Double {
        get { migration.withLock { $0.clockOffset } }
        set { migration.withLock { $0.clockOffset = newValue } }
    }

    /// The sandbox's ground truth for moving the users of `fromTeamID`/`clientID` to `toTeamID`,
    /// sorted by `sub`.
    public func migrationTruth(fromTeamID: String, clientID: String, toTeamID: String) -> [SandboxMigrationTruth] {
        let prefix = MigrationRegistry.userKey(fromTeamID, clientID, "")
        let users: [(String, MigrationRegistry.User)] = migration.withLock { reg in
            reg.users.compactMap { key, user in key.hasPrefix(prefix) ? (String(key.dropFirst(prefix.count)), user) : nil }
        }
        return users.map { sub, user in
            SandboxMigrationTruth(
                sub: sub, revoked: user.revoked, privateEmail: user.privateEmail,
                transferSub: MigrationDerivation.transferSub(user: user.appleUserID, recipient: toTeamID),
                newSub: MigrationDerivation.sub(user: user.appleUserID, team: toTeamID),
                newEmail: user.privateEmail ? MigrationDerivation.relayEmail(user: user.appleUserID, team: toTeamID) : nil)
        }.sorted { $0.sub < $1.sub }
    }
}

/// The outcome of one `/auth/usermigrationinfo` exchange inside the model.
enum MigrationExchange: Equatable {
    case transferSub(String)
    case migrated(sub: String, email: String?, stringBoolean: Bool)
    /// Apple's error code and the sandbox's reason (sent in `X-Sandbox-Reason`).
    case refused(code: String, reason: String)
}

extension SandboxModel {
    /// The sending team's exchange: `sub` + `target` → `transfer_sub`.
    ///
    /// Errors: unknown user or revoked user → `invalid_request` (TN3107 lists revoked users under
    /// `invalid_request`; the code for an unknown `sub` is unconfirmed, the sandbox uses the same);
    /// a recorded transfer of this app to `target` older than 60 days → `invalid_grant`; a user
    /// registered with `grantRefused` → `invalid_grant` (`user_grant_refused`).
    /// A `target` equal to the sender's own team is accepted, as Apple does; the identifiers are useless.
    func exportTransferSub(teamID: String, clientID: String, sub: String, target: String, now: Double) -> MigrationExchange {
        migration.withLock { reg in
            let key = MigrationRegistry.userKey(teamID, clientID, sub)
            guard let user = reg.users[key] else { return .refused(code: "invalid_request", reason: "unknown_user") }
            guard !user.revoked else { return .refused(code: "invalid_request", reason: "user_revoked") }
            guard !user.grantRefused else { return .refused(code: "invalid_grant", reason: "user_grant_refused") }
            if let transfer = reg.transfers[MigrationRegistry.transferKey(clientID, teamID, target)],
               now > transfer.at + MigrationRegistry.windowSeconds {
                return .refused(code: "invalid_grant", reason: "migration_window_closed")
            }
            let transferSub = MigrationDerivation.transferSub(user: user.appleUserID, recipient: target)
            reg.issued[transferSub] = MigrationRegistry.Issued(userKey: key, fromTeamID: teamID, toTeamID: target, clientID: clientID)
            return .transferSub(transferSub)
        }
    }

    /// The recipient team's exchange: `transfer_sub` → new `sub`, relay `email`, `is_private_email`.
    ///
    /// Errors, all `invalid_request` except the window: a `transfer_sub` never issued
    /// (`unknown_transfer_sub`); one issued for another recipient team (`transfer_sub_other_team`);
    /// no recorded transfer of this app from the sending team to this team (`app_not_transferred`);
    /// the user revoked access (`user_revoked`). More than 60 days after the transfer →
    /// `invalid_grant` (`migration_window_closed`; Apple's code is unconfirmed).
    func importTransferSub(teamID: String, clientID: String, transferSub: String, now: Double) -> MigrationExchange {
        migration.withLock { reg in
            guard let issued = reg.issued[transferSub] else {
                return .refused(code: "invalid_request", reason: "unknown_transfer_sub")
            }
            guard issued.toTeamID == teamID else { return .refused(code: "invalid_request", reason: "transfer_sub_other_team") }
            guard let transfer = reg.transfers[MigrationRegistry.transferKey(clientID, issued.fromTeamID, teamID)] else {
                return .refused(code: "invalid_request", reason: "app_not_transferred")
            }
            guard now <= transfer.at + MigrationRegistry.windowSeconds else {
                return .refused(code: "invalid_grant", reason: "migration_window_closed")
            }
            guard let user = reg.users[issued.userKey] else { return .refused(code: "invalid_request", reason: "unknown_user") }
            guard !user.revoked else { return .refused(code: "invalid_request", reason: "user_revoked") }
            guard !user.grantRefused else { return .refused(code: "invalid_grant", reason: "user_grant_refused") }
            return .migrated(
                sub: MigrationDerivation.sub(user: user.appleUserID, team: teamID),
                email: user.privateEmail ? MigrationDerivation.relayEmail(user: user.appleUserID, team: teamID) : nil,
                stringBoolean: MigrationDerivation.stringBoolean(user: user.appleUserID, team: teamID))
        }
    }
}
