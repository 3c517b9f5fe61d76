import AppleID
import Foundation
import Queue
import Synchronization
import Testing
import TestSupport

/// `work` runs its claim loop and items on the HTTP transport's loop thread
/// (`WorkerConfiguration.itemExecutor` = `CurlTransport.taskExecutor`, as `WorkCommand` wires it):
/// an item starts there, resumes there after a suspension woken from another thread (a timer),
/// and the drain ends with every item written once.
@Suite(.timeLimit(.minutes(2))) struct WorkerOnTransportThreadTests {
    enum Outcome: String, OutcomeCode { case ok }

    /// The name of the calling thread (`/proc/thread-self/comm`); the transport's is "siwa-curl".
    static func threadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    final class Recorder: Sendable {
        let names = Mutex<[String]>([])
        func note() { let name = WorkerOnTransportThreadTests.threadName(); names.withLock { $0.append(name) } }
    }

    struct RecordingHandler: JobHandler {
        let kind = "k"
        let recorder: Recorder

        func prepare(_ items: [ClaimedItem], of job: JobRecord) async throws -> [@Sendable () async -> ItemOutcome] {
            items.map { _ in
                { [recorder] in
                    recorder.note()
                    try? await Task.sleep(for: .milliseconds(2))
                    recorder.note()
                    return .succeeded(ResultRecord(outcome: Outcome.ok), audit: nil, effect: nil)
                }
            }
        }
    }

    @Test func itemsRunOnTheTransportThreadAndTheDrainEnds() async throws {
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let store = MemoryJobStore()
        store.addJob(kind: "k", count: 300)
        let recorder = Recorder()
        var configuration = WorkerConfiguration(workerID: "test-worker", concurrency: 32, claimBatch: 50, lease: .seconds(30),
                                                pollInterval: .milliseconds(50), flushMaxItems: 20, flushInterval: .milliseconds(2),
                                                shutdownGrace: .seconds(5), drain: true, drainHorizon: .zero)
        configuration.itemExecutor = transport.taskExecutor
        #expect(configuration.itemExecutor != nil)
        let worker = Worker(store: store, handlers: [RecordingHandler(recorder: recorder)], configuration: configuration,
                            logger: Logger(label: "test", minimum: .error, json: true, sink: MemoryLogSink()))
        await worker.run()
        let report = try #require(worker.lastReport)
        #expect(report.succeeded == 300)
        #expect(store.items.filter { $0.state != .succeeded }.isEmpty)
        let names = recorder.names.withLock { $0 }
        #expect(names.count == 600)
        #expect(Set(names) == ["siwa-curl"])
        // The test's own task is not on that thread: the name tells the threads apart.
        #expect(Self.threadName() != "siwa-curl")
    }
}
