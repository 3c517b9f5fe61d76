import Foundation
import AppleID
import Commands
import Postgres
import Queue
import SIWACore
import SIWAJobs

/// The process exit status: decided here and nowhere else, from typed errors and reports.
/// Libraries say what happened; this file says what that means to cron and systemd (sysexits(3)):
///
/// | exit | meaning |
/// |---|---|
/// | 0 | done; every item succeeded |
/// | 1 | finished with item failures; or nothing found, refused by the queue, a mismatch |
/// | 64 | usage error (names the flag) |
/// | 65 | refused data: a changed migration, a transfer rule, an invalid CSV or accounts file, a malformed JWKS file, a team or client without accounts (a likely typo) |
/// | 66 | an input file cannot be read (`token verify --jwks FILE`, `transfer import-csv FILE`), with the reason |
/// | 69 | a service is unavailable: a server cannot listen, a JWKS URL cannot be fetched |
/// | 70 | an unexpected error |
/// | 74 | the output cannot be written: its reader closed the pipe (`results export ... \| head`), a full disk |
/// | 75 | temporary failure: database unreachable, busy or read-only, Apple down, work left for the next run |
/// | 78 | configuration error, including a job paused for one (e.g. `invalid_client`, a refused TLS certificate), database settings, a privilege, the schema, an unusable `SIWA_CA_FILE` |
struct ExitCode: Equatable, Sendable {
    let rawValue: Int32

    private init(_ rawValue: Int32) { self.rawValue = rawValue }

    static let success = ExitCode(0)
    static let failure = ExitCode(1)
    static let usage = ExitCode(64)
    static let dataError = ExitCode(65)
    static let noInput = ExitCode(66)
    static let unavailable = ExitCode(69)
    static let software = ExitCode(70)
    static let ioError = ExitCode(74)
    static let temporaryFailure = ExitCode(75)
    static let configuration = ExitCode(78)

    /// `work`: 78 when a job is paused (a configuration error) or due work's kind cannot run here
    /// (no credentials); a database failure that stopped the run by its meaning
    /// (`of(_: DatabaseError)`: 75, 78 or 70); 75 when Apple stopped the run, a drain was stopped
    /// by a signal with work left, or completions could not be written; 1 when items failed
    /// permanently or were discarded; 75 when work is left pending beyond the drain horizon; else 0.
    static func of(_ report: WorkerReport) -> ExitCode {
        if !report.pausedJobs.isEmpty || !report.unrunnable.isEmpty { return .configuration }
        if let failure = report.databaseFailure { return of(databaseFailure: failure) }
        if report.upstreamFailure != nil { return .temporaryFailure }
        if report.stoppedWithWorkLeft != nil || report.unwritten > 0 { return .temporaryFailure }
        if report.failed > 0 || report.discarded > 0 { return .failure }
        if report.leftPending > 0 { return .temporaryFailure }
        return .success
    }

    /// `doctor`: 78 when any configuration check failed, 75 when only the database is unreachable.
    static func of(_ report: DoctorReport) -> ExitCode {
        if report.problems > 0 { return .configuration }
        return report.databaseUnreachable ? .temporaryFailure : .success
    }

    /// `accounts import`: 65 when the file was refused (nothing written), 1 when it loaded with
    /// rows rejected (`--rejects`), else 0.
    static func of(_ report: AccountImportReport) -> ExitCode {
        if !report.applied { return .dataError }
        return report.rejected > 0 ? .failure : .success
    }

    /// `tokens rekey`: 1 when tokens are left under another key than the current one (unreadable,
    /// or changed meanwhile more often than the passes could follow), else 0.
    static func of(_ report: TokenRekeyReport) -> ExitCode {
        report.remaining > 0 || report.unreadable > 0 ? .failure : .success
    }

    /// `token verify`: 0 verified, 1 rejected.
    static func of(_ outcome: TokenVerification.Outcome) -> ExitCode {
        if case .verified = outcome { return .success }
        return .failure
    }

    /// `sign-in`: 0 linked or created; 78 configuration_error; 75 no outcome in time (nil); 1 any
    /// other outcome (identity_token_rejected, code_rejected, conflict).
    static func of(signInOutcome outcome: String?) -> ExitCode {
        switch outcome {
        case "linked", "created": .success
        case "configuration_error": .configuration
        case nil: .temporaryFailure
        default: .failure
        }
    }

    /// The status for an error a command threw, and the lines to print on stderr (each is
    /// prefixed with `siwa-jobs: `).
    /// - Parameter database: the redacted connection settings, for database errors.
    static func of(_ error: any Error, database: String) -> (code: ExitCode, lines: [String]) {
        switch error {
        case let error as UsageError:
            let words = (["siwa-jobs"] + error.commandPath).joined(separator: " ")
            return (.usage, ["\(error.message)\nrun '\(words) --help' for usage"])
        case let error as ConfigurationError:
            return (.configuration, ["configuration error: \(error)"])
        case let error as CommandFailure:
            return (error.kind == .refusedInput ? .dataError : .failure, error.lines)
        case let error as MigrationError:
            return (error.kind == .newerSchema ? .configuration : .dataError, ["\(error)"])
        case let error as TransferRuleError:
            return (.dataError, ["refused: \(error)"])
        case let error as EnqueueError where error.reason == .likelyTypo:
            return (.dataError, ["refused: \(error)"])
        case let error as EnqueueError:
            return (.failure, ["\(error)"])
        case let error as AccountImportError:
            return (.dataError, ["refused: \(error)"])
        case let error as SeedConflictError:
            return (.failure, ["\(error)"])
        case let error as InputFileError:
            return (.noInput, ["\(error)"])
        case let error as ServiceUnavailable:
            return (.unavailable, ["\(error.what): \(error.error)"])
        case let error as SandboxAdminClientError:
            return (.unavailable, ["\(error)"])
        case let error as TokenVerification.Failure:
            return of(error)
        case let error as DatabaseError:
            return of(error, database: database)
        default:
            if let code = writeErrno(error) { return (.ioError, [outputFailure(code)]) }
            return (.software, ["\(error)"])
        }
    }

    /// The POSIX error under a failed `FileHandle` write (Foundation wraps it in a Cocoa file
    /// write error), EPIPE for a bare `POSIXError(.EPIPE)`, or nil when `error` is neither.
    static func writeErrno(_ error: any Error) -> Int32? {
        if let posix = error as? POSIXError { return posix.code == .EPIPE ? EPIPE : nil }
        let ns = error as NSError
        guard ns.domain == NSCocoaErrorDomain, (CocoaError.fileWriteUnknown.rawValue...CocoaError.fileWriteVolumeReadOnly.rawValue).contains(ns.code),
              let under = ns.userInfo[NSUnderlyingErrorKey] as? NSError, under.domain == NSPOSIXErrorDomain else { return nil }
        return Int32(under.code)
    }

    /// The line for an output write that failed with `code`: a reader that closed the pipe is
    /// named as such (an export into `head`), anything else by its reason.
    static func outputFailure(_ code: Int32) -> String {
        code == EPIPE ? "the output was closed by its reader (broken pipe); stopped writing"
            : "cannot write the output: \(String(cString: strerror(code)).lowercased())"
    }

    private static func of(_ failure: TokenVerification.Failure) -> (code: ExitCode, lines: [String]) {
        switch failure.kind {
        case .noClientID: (.usage, ["usage: \(failure.message)"])
        case .jwksFileInvalid: (.dataError, ["error: \(failure.message)"])
        case .jwksFileUnreadable: (.noInput, ["error: \(failure.message)"])
        case .jwksUnavailable: (.unavailable, ["error: \(failure.message)"])
        case .encoding: (.software, ["error: \(failure.message)"])
        }
    }

    private static func of(_ error: DatabaseError, database: String) -> (code: ExitCode, lines: [String]) {
        (of(error), [databaseFailureLine(error, database: database)])
    }
}

/// Database failures by meaning (`DatabaseError.meaning`), for a thrown error and for a worker run
/// that stopped on one (`WorkerReport.databaseFailure`).
extension ExitCode {
    /// transient 75 (try later), readOnly 75 (a standby or a failover in progress), misconfigured,
    /// permission and schemaMissing 78 (retrying cannot help), badData and unexpected 70.
    static func of(_ error: DatabaseError) -> ExitCode {
        switch error.meaning {
        case .transient, .readOnly: .temporaryFailure
        case .misconfigured, .permission, .schemaMissing: .configuration
        case .badData, .unexpected: .software
        }
    }

    /// A worker run that stopped on a database failure: by its meaning.
    static func of(databaseFailure: DatabaseError) -> ExitCode { of(databaseFailure) }

    /// What to print for a database failure: what it means and what to do.
    /// - Parameter database: the redacted connection settings.
    static func databaseFailureLine(_ error: DatabaseError, database: String) -> String {
        switch error.meaning {
        case .transient where error.isConnectionLoss:
            return "database unreachable at \(database): \(error)"
        case .transient:
            return "database busy (a timeout, lock or conflict; try again later): \(error)"
        case .readOnly:
            return "database is read-only: a standby or a failover in progress (at \(database)); point the settings at "
                + "the primary (with several hosts, target_session_attrs=read-write), or retry after the failover: \(error)"
        case .misconfigured:
            return "database configuration error at \(database): \(error)"
        case .permission:
            return "the database role lacks a privilege: grant it siwa_worker (or the role for this command, see the "
                + "README's roles), or run as the schema owner: \(error)"
        case .schemaMissing:
            return "the siwa schema is missing or incomplete: run 'siwa-jobs migrate' (\(error))"
        case .badData, .unexpected:
            return "\(error)"
        }
    }

    /// The line for a worker run that stopped on a database failure (`WorkerReport.databaseFailure`).
    static func workerDatabaseFailureLine(_ failure: DatabaseError, database: String) -> String {
        "database failure: " + databaseFailureLine(failure, database: database)
    }
}
