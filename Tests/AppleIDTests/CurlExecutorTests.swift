import Foundation
import Synchronization
import Testing
@testable import AppleID

/// The transport's loop thread as a task executor (`CurlTransport.taskExecutor`), against a real
/// local HTTP server (Fixtures/EchoServer.swift).
@Suite(.serialized, .timeLimit(.minutes(2))) struct CurlExecutorTests {
    /// The calling thread's name (`/proc/thread-self/comm`): the loop thread is "siwa-curl". Told
    /// apart independently of `CurlEngine.isLoopThread`, which routes the jobs.
    static func threadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A task that prefers the executor runs on the loop thread, before and after each response,
    /// and so do its child tasks: an item's whole path stays on the thread that drives its request.
    @Test func preferringTasksRunOnTheLoopThreadAcrossRequests() async throws {
        let server = try EchoServer()
        defer { server.stop() }
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let executor = try #require(transport.taskExecutor)
        let engine = try #require(executor as? CurlEngine)
        let seen = await withTaskExecutorPreference(executor) {
            await withTaskGroup(of: (before: Bool, after: Bool, echoed: Bool).self) { group in
                for index in 0..<64 {
                    group.addTask {
                        let before = engine.isLoopThread && Self.threadName() == "siwa-curl"
                        let body = Array("n=\(index)".utf8)
                        let response = try? await transport.send(HTTPRequest(method: "POST", url: server.url("/echo"), body: body,
                                                                             timeout: .seconds(10)))
                        return (before, engine.isLoopThread && Self.threadName() == "siwa-curl", response?.body == body)
                    }
                }
                var all: [(before: Bool, after: Bool, echoed: Bool)] = []
                for await one in group { all.append(one) }
                return all
            }
        }
        #expect(seen.count == 64)
        #expect(seen.filter { !$0.before }.isEmpty)
        #expect(seen.filter { !$0.after }.isEmpty)
        #expect(seen.filter { !$0.echoed }.isEmpty)
        // Without the preference, a task runs on the global executor's threads.
        let detached = await Task.detached { engine.isLoopThread || Self.threadName() == "siwa-curl" }.value
        #expect(!detached)
    }

    /// A task waiting on a request when the transport shuts down is resumed (with "transport shut
    /// down") and runs on, now on the global executor; so does one that starts afterwards.
    @Test func preferringTasksRunOnAfterShutdown() async throws {
        let server = try EchoServer()
        defer { server.stop() }
        let transport = CurlTransport()
        let executor = try #require(transport.taskExecutor)
        let started = Atomic<Bool>(false)
        async let waiting: String = withTaskExecutorPreference(executor) {
            started.store(true, ordering: .releasing)
            do {
                _ = try await transport.send(HTTPRequest(url: server.url("/slow"), timeout: .seconds(60)))
                return "answered"
            } catch {
                return Self.threadName() == "siwa-curl" ? "on the stopped loop thread" : (error as? TransportError)?.message ?? "\(error)"
            }
        }
        while !started.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(10)) }
        try await server.waitUntilSeen("/slow")   // the request is in flight on the loop
        transport.shutdown()
        let waited = await waiting
        #expect(waited == "transport shut down")
        let later = await withTaskExecutorPreference(executor) { () -> String in
            await Task.yield()
            do {
                _ = try await transport.send(HTTPRequest(url: server.url("/echo"), timeout: .seconds(5)))
                return "answered"
            } catch {
                return (error as? TransportError)?.message ?? "\(error)"
            }
        }
        #expect(later == "transport shut down")
    }
}
