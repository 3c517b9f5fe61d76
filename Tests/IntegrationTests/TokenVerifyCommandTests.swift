import Foundation
import Sandbox
import Testing
@testable import SIWAJobs

/// `siwa-jobs token verify` as ops run it: the real binary against the sandbox's JWKS.
@Suite(.timeLimit(.minutes(20))) struct TokenVerifyCommandTests {
    @Test func verifiesAgainstAJWKSURLOrFileAndNamesTheRejection() async throws {
        let sandbox = SandboxServer(configuration: SandboxConfiguration())
        try sandbox.start()
        defer { sandbox.stop() }
        let env = ProcessInfo.processInfo.environment
        let token = try #require(try sandbox.signNotifications([
            NotificationSpec(type: "account-deleted", sub: "000123.abc.0456", clientID: "com.example.web",
                             encoding: .string, eventTimeUnit: .milliseconds, eventTime: 1_657_617_063, iat: 1_700_000_000,
                             exp: 1_700_000_300),
        ]).first)
        let jwks = sandbox.baseURL + "/auth/keys"
        let at = ["--at", "2023-11-14T22:14:00Z"]   // 1_700_000_040

        let ok = try await BinaryProcess.run(["token", "verify", token, "--jwks", jwks, "--client-id", "com.example.app",
                                              "--client-id", "com.example.web"] + at, environment: env)
        #expect(ok.status == 0, "\(ok.stdout) \(ok.stderr)")
        #expect(ok.stdout.contains(#""type" : "account-delete""#) && ok.stdout.contains("2022-07-12T09:11:03.000Z"))
        #expect(!ok.stdout.contains(token) && !ok.stderr.contains(token))

        let expired = try await BinaryProcess.run(["token", "verify", token, "--jwks", jwks, "--client-id", "com.example.web",
                                                   "--at", "2024-01-01T00:00:00Z"], environment: env)
        #expect(expired.status == 1 && expired.stdout.hasPrefix("rejected: expired:"), "\(expired.stdout)")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID().uuidString).json")
        let tokenFile = FileManager.default.temporaryDirectory.appendingPathComponent("token-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: file)
            try? FileManager.default.removeItem(at: tokenFile)
        }
        let document = try await SandboxAdminClient(baseURL: sandbox.baseURL).get("/auth/keys")
        try JSONSerialization.data(withJSONObject: document).write(to: file)
        try Data((token + "\n").utf8).write(to: tokenFile)
        let wrongAud = try await BinaryProcess.run(["token", "verify", "--token-file", tokenFile.path, "--jwks", file.path,
                                                    "--client-id", "com.example.app"] + at, environment: env)
        #expect(wrongAud.status == 1 && wrongAud.stdout.hasPrefix("rejected: wrongAudience:"), "\(wrongAud.stdout)")

        let truncated = try await BinaryProcess.run(["token", "verify", String(token.dropLast(9)), "--jwks", file.path,
                                                     "--client-id", "com.example.web"] + at, environment: env)
        #expect(truncated.status == 1 && truncated.stdout.hasPrefix("rejected: malformed:"), "\(truncated.stdout)")

        let usage = try await BinaryProcess.run(["token", "verify", token, "--jwks", file.path], environment: env)
        #expect(usage.status == 64 && usage.stderr.contains("--client-id"))
        let badAt = try await BinaryProcess.run(["token", "verify", token, "--jwks", file.path, "--client-id", "x",
                                                 "--at", "yesterday"], environment: env)
        #expect(badAt.status == 64 && badAt.stderr.contains("--at"))
    }

    @Test func clientIDValuesAndJWKSFileErrorsAreNamed() async throws {
        let env = ProcessInfo.processInfo.environment
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data("{\"keys\": [".utf8).write(to: file)
        let token = "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"

        let noValue = try await BinaryProcess.run(["token", "verify", token, "--jwks", file.path, "--client-id"], environment: env)
        #expect(noValue.status == 64 && noValue.stderr.contains("--client-id needs a value"), "\(noValue.stderr)")
        let flagAsValue = try await BinaryProcess.run(["token", "verify", token, "--client-id", "--jwks", file.path], environment: env)
        #expect(flagAsValue.status == 64 && flagAsValue.stderr.contains("--client-id needs a value"), "\(flagAsValue.stderr)")
        let empty = try await BinaryProcess.run(["token", "verify", token, "--jwks", file.path, "--client-id", ""], environment: env)
        #expect(empty.status == 64 && empty.stderr.contains("--client-id: empty value"), "\(empty.stderr)")
        #expect(!empty.stderr.contains("clientIDs"), "no internal name")

        let malformed = try await BinaryProcess.run(["token", "verify", token, "--jwks", file.path, "--client-id", "c"], environment: env)
        #expect(malformed.status == 65 && malformed.stderr.contains("JWKS"), "a malformed JWKS file is a data error: \(malformed.stderr)")
        let missing = try await BinaryProcess.run(["token", "verify", token, "--jwks", file.path + ".missing", "--client-id", "c"],
                                                  environment: env)
        #expect(missing.status == 66 && missing.stderr.contains("cannot read"), "\(missing.stderr)")
    }
}
