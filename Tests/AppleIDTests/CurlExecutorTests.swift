import Foundation
import Synchronization
import Testing
@testable import AppleID

/// The transport's loop thread as a task executor (`CurlTransport.taskExecutor`), against a real
/// local HTTP server (Fixtures/EchoServer.swift).
@Suite(.serialized, .timeLimit(.minutes(2))) struct CurlExecutorTests {
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
                        let before = engine.isLoopThread
                        let body = Array("n=\(index)".utf8)
                        let response = try? await transport.send(HTTPRequest(method: "POST", url: server.url("/echo"), body: body,
                                                                             timeout: .seconds(10)))
                        return (before, engine.isLoopThread, response?.body == body)
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
        let detached = await Task.detached { engine.isLoopThread }.value
        #expect(!detached)
    }

    /// A task waiting on a request when the transport shuts down is resumed (with "transport shut
    /// down") and runs on, now on the global executor; so does one that starts afterwards.
    @Test func preferringTasksRunOnAfterShutdown() async throws {
        let server = try EchoServer()
        defer { server.stop() }
        let transport = CurlTransport()
        let executor = try #require(transport.taskExecutor)
        let engine = try #require(executor as? CurlEngine)
        let started = Atomic<Bool>(false)
        async let waiting: String = withTaskExecutorPreference(executor) {
            started.store(true, ordering: .releasing)
            do {
                _ = try await transport.send(HTTPRequest(url: server.url("/slow"), timeout: .seconds(60)))
                return "answered"
            } catch {
                return engine.isLoopThread ? "on the stopped loop thread" : (error as? TransportError)?.message ?? "\(error)"
            }
        }
        while !started.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(200))   // the request is in flight on the loop
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
