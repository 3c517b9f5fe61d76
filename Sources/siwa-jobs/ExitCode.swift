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
/// | 65 | refused data: a changed migration, a transfer rule, an invalid CSV, a malformed JWKS file |
/// | 66 | an input file cannot be read (`token verify --jwks FILE`) |
/// | 69 | a service is unavailable: a server cannot listen, a JWKS URL cannot be fetched |
/// | 70 | an unexpected error |
/// | 75 | temporary failure: database unreachable, Apple down, work left for the next run |
/// | 78 | configuration error, including a job paused for one |
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
    static let temporaryFailure = ExitCode(75)
    static let configuration = ExitCode(78)

    /// `work`: 78 when a job is paused (a configuration error) or due work's kind cannot run here
    /// (no credentials); 75 when the database or Apple stopped the run, a drain was stopped by a
    /// signal with work left, or completions could not be written; 1 when items failed
    /// permanently or were discarded; 75 when work is left pending beyond the drain horizon; else 0.
    static func of(_ report: WorkerReport) -> ExitCode {
        if !report.pausedJobs.isEmpty || !report.unrunnable.isEmpty { return .configuration }
        if report.databaseFailure != nil || report.upstreamFailure != nil { return .temporaryFailure }
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

    /// `token verify`: 0 verified, 1 rejected.
    static func of(_ outcome: TokenVerification.Outcome) -> ExitCode {
        if case .verified = outcome { return .success }
        return .failure
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
            return (.dataError, ["\(error)"])
        case let error as TransferRuleError:
            return (.dataError, ["refused: \(error)"])
        case let error as EnqueueError:
            return (.failure, ["\(error)"])
        case let error as SeedConflictError:
            return (.failure, ["\(error)"])
        case let error as ServiceUnavailable:
            return (.unavailable, ["\(error.what): \(error.error)"])
        case let error as TokenVerification.Failure:
            return of(error)
        case let error as DatabaseError:
            return of(error, database: database)
        default:
            return (.software, ["\(error)"])
        }
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
        if error.isConnectionLoss {
            return (.temporaryFailure, ["database unreachable at \(database): \(error)"])
        }
        if error.isUnknownDatabase || error.isInvalidCredentials {
            return (.configuration, ["database configuration error at \(database): \(error)"])
        }
        if error.isUndefinedTable || error.isUndefinedSchema {
            return (.configuration, ["the siwa schema is missing or incomplete: run 'siwa-jobs migrate' (\(error))"])
        }
        return (.software, ["\(error)"])
    }
}
