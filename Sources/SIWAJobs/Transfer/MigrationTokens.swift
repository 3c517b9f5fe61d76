import AppleID
import Clocks
import Foundation
import Queue
import Synchronization

/// The migration-token providers of this process, one per (team ID, client ID), shared by the
/// transfer kinds so every in-flight item of a team and client reuses one bearer token.
public final class MigrationTokens: Sendable {
    private let providers = Mutex<[String: MigrationTokenProvider]>([:])
    private let evidence = Mutex<[Int64: GrantEvidence]>([:])
    let refreshMargin: Duration
    let clock: any WallClock

    /// - Parameters:
    ///   - refreshMargin: re-mint this long before `expires_in` runs out (default 5 minutes).
    ///   - clock: judges token expiry.
    public init(refreshMargin: Duration = .seconds(300), clock: any WallClock) {
        self.refreshMargin = refreshMargin
        self.clock = clock
    }

    /// The provider for `client` of `teamID`, created on first use.
    public func provider(teamID: String, client: AppleIDClient) -> MigrationTokenProvider {
        providers.withLock { map in
            let key = teamID + "\u{1F}" + client.clientID
            if let existing = map[key] { return existing }
            let created = MigrationTokenProvider(client: client, refreshMargin: refreshMargin, clock: clock)
            map[key] = created
            return created
        }
    }

    /// What this process has seen of `job`'s migration calls (`GrantEvidence`), created on first use.
    func evidence(job: Int64) -> GrantEvidence {
        evidence.withLock { map in
            if let existing = map[job] { return existing }
            let created = GrantEvidence(clock: clock)
            map[job] = created
            return created
        }
    }
}

/// Why a migration call did not produce a value.
enum MigrationCallFailure: Error {
    /// Minting the bearer token failed.
    case mint(AppleIDError)
    /// `invalid_grant` again with a token minted after the first `invalid_grant`: not the token's
    /// age; the window is closed or Apple refuses this transfer.
    case grantRefused(AppleIDError)
    /// The call itself failed (per-user, configuration or transient; see `errorClass`).
    case call(AppleIDError)
    /// `invalid_grant` with a fresh token for this user only (`GrantEvidence` verdict `perUser`);
    /// `note` says why it is taken to be this user's.
    case userRefused(AppleIDError, note: String)
    /// `invalid_grant` with a fresh token, and nothing yet shows whether the grant works: retried.
    case undecided(AppleIDError)

    /// The error and its explanation when the failure is this user's alone (a permanent failure of
    /// the item); nil for failures about the job, the token or the transport.
    var perUser: (error: AppleIDError, note: String?)? {
        switch self {
        case .call(let error): (error, nil)
        case .userRefused(let error, let note): (error, note)
        case .mint, .grantRefused, .undecided: nil
        }
    }
}

enum MigrationCall {
    /// Runs `body` with the shared bearer token. On `invalid_grant` the token is invalidated
    /// (single-flight re-mint) and `body` runs once more with the new token. A success is noted
    /// in `evidence`.
    /// - Throws: `MigrationCallFailure` saying which step failed.
    static func run<T: Sendable>(_ provider: MigrationTokenProvider, evidence: GrantEvidence,
                                 _ body: @Sendable (String) async throws(AppleIDError) -> T) async throws(MigrationCallFailure) -> T {
        for attempt in 1...2 {
            let token: MigrationToken
            do { token = try await provider.token() } catch { throw .mint(error) }
            do {
                let value = try await body(token.value)
                evidence.succeeded()
                return value
            } catch where error.appleError == "invalid_grant" {
                await provider.invalidate(token)
                if attempt == 2 { throw .grantRefused(error) }
            } catch {
                throw .call(error)
            }
        }
        throw .call(AppleIDError(errorClass: .transient, detail: "migration call not attempted"))
    }

    /// The item outcome for every failure that is not about the user: cancellation releases,
    /// configuration errors and refused grants pause the job with what to check, transient errors
    /// retry. Returns nil for a per-user (permanent) call failure, which the kind records.
    /// `now` (the handler's clock) gives the days left named in a refused grant's pause reason.
    static func jobLevelOutcome(_ failure: MigrationCallFailure, clientID: String, teamID: String,
                                window: TransferWindow, now: Date, discarded: ResultRecord) -> ItemOutcome? {
        let error: AppleIDError
        switch failure {
        case .mint(let e):
            if e.isCancellation { return .released }
            if e.neverReachedApple { return .unreachable(error: e.description) }   // uncharged (issue #8)
            if e.errorClass == .transient { return retry(e, discarded) }
            return .pauseJob(reason: "Apple refused the user.migration access token for team \(teamID), client '\(clientID)' "
                + "(\(e.appleError ?? e.detail)): check the team ID, the key ID (kid), that the .p8 key belongs to this team "
                + "and has Sign in with Apple enabled, and the client ID; then resume the job")
        case .undecided(let e):
            var result = discarded
            result.httpStatus = e.httpStatus
            result.appleError = e.appleError
            result.detail = jsonObject(["reason": "Apple answered invalid_grant for this user even with a freshly minted token, "
                + "and no other call of this job has shown yet whether the grant works; retried later"])
            return .retry(error: "undecided invalid_grant: \(e.description)", retryAfter: .seconds(30), result: result)
        case .userRefused:
            return nil
        case .grantRefused(let e):
            return .pauseJob(reason: "Apple answered \(e.appleError ?? "invalid_grant") to /auth/usermigrationinfo even with a freshly minted "
                + "token for team \(teamID), client '\(clientID)', for \(GrantEvidence.refusalsInARow) users in a row with no success "
                + "in between: the migration window is likely closed (transfer date "
                + "\(window.day), \(window.daysLeft(now: now)) days left by our clock). If it has closed: transfer the app back to "
                + "the sending team, then transfer it again, and run the export and import again with the new --transfer-date")
        case .call(let e):
            error = e
        }
        if error.isCancellation { return .released }
        if error.neverReachedApple { return .unreachable(error: error.description) }   // uncharged (issue #8)
        if let reason = error.certificatePauseReason(calling: "Apple for team \(teamID), client '\(clientID)'") {
            return .pauseJob(reason: reason)
        }
        switch error.errorClass {
        case .transient: return retry(error, discarded)
        case .configuration:
            return .pauseJob(reason: "Apple rejected the client configuration (\(error.appleError ?? "configuration error")) for "
                + "team \(teamID), client '\(clientID)': check the team ID, the key ID (kid), the .p8 key and the client ID; "
                + "then resume the job")
        case .permanent: return nil
        }
    }

    private static func retry(_ error: AppleIDError, _ discarded: ResultRecord) -> ItemOutcome {
        var result = discarded
        result.httpStatus = error.httpStatus
        result.appleError = error.appleError
        result.detail = jsonObject(["reason": error.detail])
        return .retry(error: error.description, retryAfter: error.retryAfter, result: result)
    }
}
