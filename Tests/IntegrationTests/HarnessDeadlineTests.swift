import Foundation
import Testing

/// The harness itself: a process that dies early or never exits fails its test within the
/// deadline instead of hanging CI (issue #14). The deadlines here are liveness bounds.
@Suite(.timeLimit(.minutes(20))) struct HarnessDeadlineTests {
    /// A worker that exits at once (its database port is closed) ends a wait for a condition
    /// that never comes, with a failure naming what was awaited and the exit status.
    @Test func aWaitOnAWorkerThatExitedEarlyFailsNamingIt() async throws {
        var env = ProcessInfo.processInfo.environment
        env["PGHOST"] = "127.0.0.1"
        env["PGPORT"] = "1"
        env.removeValue(forKey: "DATABASE_URL")
        let worker = try BinaryProcess(["work", "--drain"], environment: env)
        let failure = await #expect(throws: TestFailure.self) {
            try await Eventually.wait("a result that never comes", while: worker, timeout: .seconds(300)) { false }
        }
        let text = failure.map { "\($0)" } ?? ""
        #expect(text.contains("a result that never comes"), "\(text)")
        #expect(text.contains("exited with status 75"), "\(text)")
        #expect(!worker.process.isRunning)
    }

    /// A wait with no process still ends at its deadline.
    @Test func aWaitWithoutAProcessEndsAtItsDeadline() async throws {
        let failure = await #expect(throws: TestFailure.self) {
            try await Eventually.wait("nothing", timeout: .milliseconds(200)) { false }
        }
        #expect(failure.map { "\($0)" }?.contains("not seen within") == true)
    }

    /// A process that never exits is killed at `wait(timeout:)`'s deadline and the test records
    /// an issue (expected here) instead of waiting forever.
    @Test func aProcessThatNeverExitsIsKilledAtTheDeadline() async throws {
        let server = try BinaryProcess(["sandbox", "--port", "0"], environment: ProcessInfo.processInfo.environment)
        var status: Int32 = 0
        await withKnownIssue("the sandbox serves until stopped, so the deadline kills it") {
            status = await server.wait(timeout: .seconds(2))
        }
        #expect(!server.process.isRunning)
        #expect(status == SIGKILL, "terminated by the deadline's SIGKILL, status \(status)")
    }
}
