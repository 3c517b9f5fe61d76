import Postgres
import Queue
import Testing
@testable import siwa_jobs

/// Database failures decide exit codes by meaning (`DatabaseError.meaning`), thrown or reported
/// by a worker run: 75 try later, 78 fix something, 70 a surprise.
@Suite struct DatabaseExitCodeTests {
    static let cases: [(DatabaseError, Int32, String)] = [
        (DatabaseError(kind: .connection, sqlState: "08001", message: "refused"), 75, "database unreachable at host=db"),
        (DatabaseError(kind: .query, sqlState: "57014", message: "statement timeout"), 75, "database busy"),
        (DatabaseError(kind: .query, sqlState: "55P03", message: "lock timeout"), 75, "database busy"),
        (DatabaseError(kind: .query, sqlState: "40P01", message: "deadlock"), 75, "database busy"),
        (DatabaseError(kind: .query, sqlState: "25006", message: "cannot execute UPDATE in a read-only transaction"), 75,
         "database is read-only: a standby or a failover in progress"),
        (DatabaseError.readOnly("the server is a hot standby"), 75, "database is read-only: a standby or a failover in progress"),
        (DatabaseError(kind: .connection, sqlState: "08001", message: "password authentication failed",
                       misconfiguredConnection: true, hint: "check PGPASSWORD"), 78, "database configuration error at host=db"),
        (DatabaseError(kind: .query, sqlState: "42501", message: "permission denied for table jobs"), 78, "lacks a privilege"),
        (DatabaseError(kind: .query, sqlState: "42P01", message: "relation does not exist"), 78, "run 'siwa-jobs migrate'"),
        (DatabaseError(kind: .query, sqlState: "3F000", message: "schema does not exist"), 78, "run 'siwa-jobs migrate'"),
        (DatabaseError(kind: .query, sqlState: "42703", message: "column does not exist"), 78, "run 'siwa-jobs migrate'"),
        (DatabaseError(kind: .query, sqlState: "42601", message: "syntax error"), 70, "syntax error"),
        (DatabaseError(kind: .query, sqlState: "23505", message: "duplicate key"), 70, "duplicate key"),
    ]

    @Test func thrownErrorsByMeaning() {
        for (error, code, line) in Self.cases {
            let mapped = ExitCode.of(error, database: "host=db")
            #expect(mapped.code.rawValue == code, "\(error)")
            #expect(mapped.lines.count == 1 && mapped.lines[0].contains(line), "\(mapped.lines)")
            #expect(mapped.lines[0].contains(error.description), "the error itself is kept: \(mapped.lines)")
        }
    }

    @Test func workerRunsStoppedByADatabaseFailureByMeaning() {
        for (error, code, line) in Self.cases {
            #expect(ExitCode.of(databaseFailure: error).rawValue == code, "\(error)")
            #expect(ExitCode.workerDatabaseFailureLine(error, database: "host=db").contains(line))
            var report = WorkerReport()
            report.databaseFailure = error
            #expect(ExitCode.of(report).rawValue == code, "a run stopped on \(error)")
        }
    }

    @Test func migrateAgainstANewerSchemaIsAConfigurationError() {
        let newer = MigrationError(migration: "0099_x.sql", message: "newer", kind: .newerSchema)
        #expect(ExitCode.of(newer, database: "").code.rawValue == 78)
        #expect(ExitCode.of(MigrationError(migration: "0002_views.sql", message: "changed"), database: "").code.rawValue == 65)
    }
}
