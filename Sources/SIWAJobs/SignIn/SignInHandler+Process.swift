import AppleID
import Clocks
import Foundation
import Postgres
import Queue
import SIWACrypto

extension SignInHandler {
    /// One sign-in, steps 1–4 of `SignInHandler`.
    func process(_ row: SignInRow, item: ClaimedItem) async -> ItemOutcome {
        guard let token = row.identityToken, let code = row.code else { return .released }
        var base = SignInVerdict(.configurationError)
        let started = clock.now
        base.waitMs = max(0, Int(started.timeIntervalSince(row.submittedAt) * 1000))
        base.identityTokenFingerprint = keyring.fingerprint(token)
        base.codeFingerprint = keyring.fingerprint(code)
        guard let client = registry.client(teamID: row.teamID, clientID: row.clientID) else {
            return await finish(base.with(.configurationError, reason: "no_credentials",
                detail: "no Apple credentials configured for team '\(row.teamID)' and client '\(row.clientID)' on this worker"),
                row, item)
        }
        let claims: VerifiedClaims
        switch await verify(token, row) {
        case .verified(let verified): claims = verified
        case .rejected(let reason, let detail):
            return await finish(base.with(.identityTokenRejected, reason: reason, detail: detail), row, item)
        case .retry(let why):
            return .retry(error: why, retryAfter: max(.seconds(1), keys.minimumRefetchInterval),
                          result: base.with(.discarded, reason: "jwks_unavailable", detail: why).result)
        }
        guard let sub = claims.sub else { return await finish(base.with(.identityTokenRejected, reason: "malformed"), row, item) }
        base.sub = sub
        base.realUserStatus = claims.realUserStatus
        let issued = claims.iat.map { Date(timeIntervalSince1970: Double($0)) } ?? row.submittedAt
        let codeDeadline = issued.addingTimeInterval(Self.codeLifetime.seconds)
        let tokens: TokenResponse
        do {
            tokens = try await client.exchangeAuthorizationCode(code, redirectURI: row.redirectURI)
        } catch {
            return await exchangeFailed(error.atAttempt(item.attempt), base: base, deadline: codeDeadline, row, item)
        }
        base.httpStatus = 200
        base.appleMs = Int(clock.now.timeIntervalSince(started) * 1000)
        guard let refresh = tokens.refreshToken, let idToken = tokens.idToken,
              Self.returnedSub(idToken, clientID: row.clientID) == sub else {
            return await finish(base.with(.codeRejected, reason: "id_token_mismatch",
                detail: "the id_token Apple returned is unreadable, not for this client, or names another sub"), row, item)
        }
        // An empty email claim (Work & School accounts) is no email: it never blanks a stored one.
        let email = claims.email.flatMap { $0.isEmpty ? nil : $0 }
        let exchanged = ExchangedSignIn(row: row, sub: sub, email: email, isPrivateEmail: claims.isPrivateEmail,
                                        transferSub: claims.transferSub, refreshToken: refresh, verdict: base)
        return await stored(exchanged, item)
    }

    /// The outcome of a code exchange that threw.
    private func exchangeFailed(_ error: AppleIDError, base: SignInVerdict, deadline: Date, _ row: SignInRow,
                                _ item: ClaimedItem) async -> ItemOutcome {
        if error.isCancellation { return .released }
        var verdict = base
        verdict.httpStatus = error.httpStatus
        switch error.errorClass {
        case .configuration:
            return await finish(verdict.with(.configurationError, reason: error.appleError ?? "configuration",
                detail: "Apple rejected the client configuration for client '\(row.clientID)': \(error.description)"), row, item)
        case .permanent:
            return await finish(verdict.with(.codeRejected, reason: error.appleError ?? "rejected", detail: error.description), row, item)
        case .transient:
            guard clock.now < deadline else {
                return await finish(verdict.with(.codeRejected, reason: "apple_unavailable",
                    detail: "Apple did not answer before the code expired (5 minutes after the token's iat): \(error.description)"),
                    row, item)
            }
            if error.neverReachedApple { return .unreachable(error: error.description) }
            return .retry(error: error.description, retryAfter: error.retryAfter,
                          result: verdict.with(.discarded, reason: error.appleError, detail: error.description).result)
        }
    }

    /// Stores the account, retrying a lost race once.
    private func stored(_ exchanged: ExchangedSignIn, _ item: ClaimedItem) async -> ItemOutcome {
        var lastError = ""
        for attempt in 0..<3 {
            do {
                guard let verdict = try await store.store(exchanged, jobID: item.jobID, itemID: item.id, keyring: keyring) else {
                    return .succeeded(ResultRecord(SignInOutcome.alreadyProcessed, detail: "{}"), audit: nil, effect: nil)
                }
                return .succeeded(verdict.result, audit: nil, effect: nil)
            } catch is SignInRaceLost {
                continue
            } catch let error as DatabaseError where error.isUniqueViolation && error.message.contains("accounts_external_key") {
                return await finish(exchanged.verdict.with(.conflict, reason: "external_user_id_taken",
                    detail: "external_user_id belongs to another account of team '\(exchanged.row.teamID)' and client '\(exchanged.row.clientID)'"),
                    exchanged.row, item)
            } catch let error as DatabaseError {
                lastError = error.description
                try? await Task.sleep(for: .milliseconds(100 << (attempt * 2)))
            } catch {
                return await finish(exchanged.verdict.with(.configurationError, reason: "token_key",
                    detail: "the refresh token could not be sealed: \(error)"), exchanged.row, item)
            }
        }
        // The code is spent: a later attempt finds it used (code_rejected) unless this write lands.
        return .retry(error: "storing the sign-in failed: \(lastError)", retryAfter: .seconds(1),
                      result: exchanged.verdict.with(.discarded, reason: "database", detail: lastError).result)
    }

    /// Writes `verdict` (no account change) and returns the item's outcome.
    func finish(_ verdict: SignInVerdict, _ row: SignInRow, _ item: ClaimedItem) async -> ItemOutcome {
        do {
            guard try await store.record(verdict, signInID: row.id, jobID: item.jobID, itemID: item.id) else {
                return .succeeded(ResultRecord(SignInOutcome.alreadyProcessed, detail: "{}"), audit: nil, effect: nil)
            }
        } catch {
            return .retry(error: "recording the sign-in outcome failed: \(error)", retryAfter: .seconds(1),
                          result: verdict.with(.discarded, reason: "database", detail: "\(error)").result)
        }
        switch verdict.outcome {
        case .configurationError, .conflict: return .failed(verdict.result, audit: nil, effect: nil)
        default: return .succeeded(verdict.result, audit: nil, effect: nil)
        }
    }
}

extension SignInVerdict {
    /// A copy with another outcome, reason and detail.
    func with(_ outcome: SignInOutcome, reason: String? = nil, detail: String? = nil) -> SignInVerdict {
        var copy = self
        copy.outcome = outcome
        copy.reason = reason
        copy.detail = detail
        return copy
    }
}
