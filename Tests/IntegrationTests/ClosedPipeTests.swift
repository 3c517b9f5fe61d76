import Foundation
import Testing

/// Output to a pipe nobody reads any more (`siwa-jobs enqueue ... | head -1`, a log collector
/// gone): the command carries on and its exit code says what happened, instead of crashing on the
/// write's EPIPE.
@Suite struct ClosedPipeTests {
    /// Runs the binary with stdout and stderr on pipes whose reading ends are closed before it
    /// writes; returns its exit status and how it ended.
    static func runIntoClosedPipes(_ arguments: [String], environment: [String: String]) async throws -> (Int32, Process.TerminationReason) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BinaryProcess.binaryPath)
        process.arguments = arguments
        process.environment = environment
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try out.fileHandleForReading.close()
        try err.fileHandleForReading.close()
        try process.run()
        let deadline = ContinuousClock.now + .seconds(120)   // a liveness bound only
        while process.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return (process.terminationStatus, process.terminationReason)
    }

    @Test func enqueueAndAWorkerWritingIntoClosedPipesFinishTheirWork() async throws {
        let db = try await TestDatabase.create()
        var env = db.environment
        env["SIWA_LOG_LEVEL"] = "info"   // the worker logs as it runs
        let (enqueued, howEnqueue) = try await Self.runIntoClosedPipes(["enqueue", "noop", "--items", "50"], environment: env)
        #expect(howEnqueue == .exit && enqueued == 0, "enqueue ended by \(howEnqueue) with \(enqueued)")
        #expect(try await db.scalar("SELECT count(*)::int FROM siwa.job_items", as: Int.self) == 50)
        let (worked, howWork) = try await Self.runIntoClosedPipes(["work", "--drain", "--stats"], environment: env)
        #expect(howWork == .exit && worked == 0, "work ended by \(howWork) with \(worked)")
        #expect(try await db.scalar("SELECT count(*)::int FROM siwa.results", as: Int.self) == 50)
        // An export whose reader is gone (`results export | head`) stops with 74, not a crash or 70.
        let job = try await db.scalar("SELECT max(id)::int FROM siwa.jobs", as: Int.self)
        let (exported, howExport) = try await Self.runIntoClosedPipes(["results", "export", "--job", "\(job)", "--format", "csv"], environment: env)
        #expect(howExport == .exit && exported == 74, "results export ended by \(howExport) with \(exported)")
        await db.drop()
    }
}
