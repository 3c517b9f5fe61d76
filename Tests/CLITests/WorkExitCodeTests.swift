import Postgres
import Queue
import Testing
@testable import siwa_jobs

/// Exit codes of `work` for the report fields added by issue #8.
@Suite struct WorkExitCodeTests {
    @Test func workThatCannotRunHereIsAConfigurationError() {
        var report = WorkerReport()
        report.succeeded = 3
        report.unrunnable = [UnrunnableJob(job: JobRecord(id: 4, kind: "refresh-validation", spec: "{}", state: .running),
                                           reason: "no Apple credentials configured")]
        #expect(ExitCode.of(report).rawValue == 78)
    }

    @Test func aDrainStoppedWithWorkLeftOrCompletionsUnwrittenIsATemporaryFailure() {
        var report = WorkerReport()
        report.succeeded = 10
        report.stoppedWithWorkLeft = "3173 items left"
        #expect(ExitCode.of(report).rawValue == 75)
        report.failed = 1
        #expect(ExitCode.of(report).rawValue == 75, "an unfinished run outranks item failures")
        report.stoppedWithWorkLeft = nil
        report.unwritten = 5
        #expect(ExitCode.of(report).rawValue == 75)
        report.unwritten = 0
        #expect(ExitCode.of(report).rawValue == 1)
    }
}
