import AppleID
import Foundation

/// POSTs notification payloads to a receiver as Apple does (apple-api.md §8.1: JSON
/// `{"payload":"<JWT>"}`), a few at a time. For the sandbox and tests.
public struct NotificationSender: Sendable {
    public let url: String
    let transport: any HTTPTransport

    public init(url: String, transport: any HTTPTransport = CurlTransport(maxConnectionsPerHost: 16)) {
        self.url = url
        self.transport = transport
    }

    /// Sends every payload once, at most `concurrency` at a time.
    /// - Returns: how many answers had each HTTP status (`0` for transport errors).
    public func send(_ payloads: [String], concurrency: Int = 8) async -> [Int: Int] {
        await withTaskGroup(of: Int.self) { group in
            var statuses: [Int: Int] = [:]
            var next = 0
            func add() {
                guard next < payloads.count else { return }
                let body = Self.body(payloads[next])
                next += 1
                group.addTask { await post(body) }
            }
            for _ in 0..<max(1, concurrency) { add() }
            for await status in group {
                statuses[status, default: 0] += 1
                add()
            }
            return statuses
        }
    }

    /// POSTs a raw body; returns the status (0 on a transport error).
    public func post(_ body: [UInt8]) async -> Int {
        let request = HTTPRequest(method: "POST", url: url, headers: [("Content-Type", "application/json")],
                                  body: body, timeout: .seconds(30))
        return (try? await transport.send(request).status) ?? 0
    }

    static func body(_ payload: String) -> [UInt8] {
        let data = (try? JSONSerialization.data(withJSONObject: ["payload": payload])) ?? Data()
        return Array(data)
    }
}
