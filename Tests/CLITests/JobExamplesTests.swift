import Foundation
import Testing

/// The units and examples in jobs/ give each long-running process its own environment file, and
/// the receiver's holds no secret (issue #13): checked on the files as shipped.
@Suite struct JobExamplesTests {
    static let jobs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("jobs")

    static func environmentFile(_ unit: String) throws -> String? {
        let text = try String(contentsOf: jobs.appendingPathComponent(unit), encoding: .utf8)
        return text.split(separator: "\n").first { $0.hasPrefix("EnvironmentFile=") }.map { String($0.dropFirst(16)) }
    }

    @Test func theReceiverAndTheDashboardHaveEnvironmentFilesOfTheirOwn() throws {
        let worker = try Self.environmentFile("siwa-jobs-worker.service")
        let receiver = try Self.environmentFile("siwa-jobs-notifications.service")
        let dashboard = try Self.environmentFile("siwa-jobs-dashboard.service")
        #expect(worker != nil && receiver != nil && dashboard != nil)
        #expect(Set([worker, receiver, dashboard]).count == 3, "\(String(describing: [worker, receiver, dashboard]))")
    }

    @Test func theReceiversExampleEnvironmentHoldsNoKey() throws {
        let text = try String(contentsOf: Self.jobs.appendingPathComponent("receiver.env.example"), encoding: .utf8)
        let settings = text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: "=").first }
        #expect(settings.contains("DATABASE_URL"))
        for secret in ["SIWA_KEY_FILE", "SIWA_PRIVATE_KEY", "SIWA_TOKEN_KEY", "SIWA_TOKEN_KEY_FILE", "SIWA_TOKEN_KEYS_PREVIOUS",
                       "SIWA_TEAMS_FILE"] {
            #expect(!settings.contains(Substring(secret)), "\(secret) in receiver.env.example")
        }
    }
}
