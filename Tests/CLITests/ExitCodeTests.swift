import Foundation
import AppleID
import Commands
import Postgres
import Queue
import SIWACore
@testable import SIWAJobs
import Testing
@testable import siwa_jobs

/// The one place that decides exit statuses (README's table).
@Suite struct ExitCodeTests {
    @Test func workerReports() {
        var report = WorkerReport()
        report.succeeded = 10
        #expect(ExitCode.of(report).rawValue == 0)
        report.leftPending = 2
        #expect(ExitCode.of(report).rawValue == 75, "retries left beyond the drain horizon")
        report.failed = 1
        #expect(ExitCode.of(report).rawValue == 1, "item failures outrank work left pending")
        report.failed = 0
        report.discarded = 1
        #expect(ExitCode.of(report).rawValue == 1)
        report.upstreamFailure = "Apple down"
        #expect(ExitCode.of(report).rawValue == 75)
        report.upstreamFailure = nil
        report.databaseFailure = DatabaseError(kind: .connection, message: "connection lost", connectionWasLost: true)
        #expect(ExitCode.of(report).rawValue == 75)
        report.pausedJobs = [7: "invalid_client"]
        #expect(ExitCode.of(report).rawValue == 78, "a paused job outranks everything")
    }

    @Test func doctorReports() {
        var report = DoctorReport()
        report.ok("database", "host=db")
        #expect(ExitCode.of(report).rawValue == 0)
        report.databaseDown("host=db: refused")
        #expect(ExitCode.of(report).rawValue == 75, "only the database is unreachable")
        report.fail("token encryption key", "not set")
        #expect(ExitCode.of(report).rawValue == 78)
    }

    @Test func tokenVerdicts() {
        #expect(ExitCode.of(TokenVerification.Outcome.verified(json: "{}")).rawValue == 0)
        #expect(ExitCode.of(TokenVerification.Outcome.rejected(JWTVerificationError(.expired, "old"))).rawValue == 1)
        let failures: [(TokenVerification.Failure.Kind, Int32, String)] = [
            (.noClientID, 64, "usage: m"), (.jwksFileInvalid, 65, "error: m"), (.jwksFileUnreadable, 66, "error: m"),
            (.jwksUnavailable, 69, "error: m"), (.encoding, 70, "error: m"),
        ]
        for (kind, code, line) in failures {
            let mapped = ExitCode.of(TokenVerification.Failure(kind, "m"), database: "")
            #expect(mapped.code.rawValue == code && mapped.lines == [line], "\(kind)")
        }
    }

    @Test func errors() {
        func code(_ error: any Error) -> Int32 { ExitCode.of(error, database: "host=db").code.rawValue }
        #expect(code(UsageError("--x: bad", commandPath: ["work"])) == 64)
        #expect(ExitCode.of(UsageError("--x: bad", commandPath: ["work"]), database: "").lines
            == ["--x: bad\nrun 'siwa-jobs work --help' for usage"])
        #expect(code(ConfigurationError("SIWA_TEAM_ID is not set")) == 78)
        #expect(ExitCode.of(ConfigurationError("SIWA_TEAM_ID is not set"), database: "").lines
            == ["configuration error: SIWA_TEAM_ID is not set"])
        #expect(code(CommandFailure("job 3 not found")) == 1)
        #expect(code(CommandFailure(lines: ["bad line"], kind: .refusedInput)) == 65)
        #expect(code(EnqueueError(message: "already active")) == 1)
        #expect(code(TransferRuleError(message: "target is the sending team itself")) == 65)
        #expect(code(SeedConflictError()) == 1)
        #expect(code(MigrationError(migration: "0002_views.sql", message: "changed")) == 65)
        #expect(code(ServiceUnavailable(what: "sandbox", error: ConfigurationError("port in use"))) == 69)
        #expect(code(DatabaseError(kind: .connection, message: "refused")) == 75)
        #expect(code(DatabaseError(kind: .query, sqlState: "57P01", message: "shutdown")) == 75)
        #expect(code(DatabaseError(kind: .query, sqlState: "28P01", message: "password")) == 78)
        #expect(code(DatabaseError(kind: .query, sqlState: "3D000", message: "no db")) == 78)
        #expect(code(DatabaseError(kind: .query, sqlState: "42P01", message: "no table")) == 78)
        #expect(code(DatabaseError(kind: .query, sqlState: "3F000", message: "no schema")) == 78)
        #expect(code(DatabaseError(kind: .query, sqlState: "22P02", message: "bad input")) == 70)
        #expect(code(CancellationError()) == 70)
        #expect(code(POSIXError(.ECONNRESET)) == 70, "only output writes are I/O errors")
        #expect(ExitCode.of(DatabaseError(kind: .connection, message: "refused"), database: "host=db").lines.first?
            .hasPrefix("database unreachable at host=db: ") == true)
    }

    /// A real `FileHandle` write that fails: into a pipe whose reader is gone (`results export | head`)
    /// and into a full device. Both are 74 with a line naming why, not Foundation's error text.
    @Test func outputWritesThatFailAreIOErrors() throws {
        signal(SIGPIPE, SIG_IGN)   // as SIWAJobsCommand.main: the write returns EPIPE instead
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        close(ends[0])
        let writer = FileHandle(fileDescriptor: ends[1], closeOnDealloc: true)
        let broken = try #require(throwing { try writer.write(contentsOf: Data("row\n".utf8)) })
        let mapped = ExitCode.of(broken, database: "")
        #expect(mapped.code.rawValue == 74, "\(broken)")
        #expect(mapped.lines == ["the output was closed by its reader (broken pipe); stopped writing"])
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        let noSpace = try #require(throwing { try full.write(contentsOf: Data(repeating: 0, count: 65_536)) })
        let mappedFull = ExitCode.of(noSpace, database: "")
        #expect(mappedFull.code.rawValue == 74, "\(noSpace)")
        #expect(mappedFull.lines == ["cannot write the output: no space left on device"])
    }

    private func throwing(_ body: () throws -> Void) -> (any Error)? {
        do { try body(); return nil } catch { return error }
    }
}
