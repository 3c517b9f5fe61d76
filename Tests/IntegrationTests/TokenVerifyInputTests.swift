import Foundation
import Sandbox
import Testing
@testable import SIWAJobs

/// Issue 8 §10: `token verify --at` takes epoch seconds too, and `--jwks` refuses plain http to a
/// host that is not loopback (exit 64, naming `--jwks`), before anything is fetched.
@Suite(.timeLimit(.minutes(20))) struct TokenVerifyInputTests {
    @Test func atTakesEpochSecondsAndJWKSMustBeHTTPSUnlessLoopback() async throws {
        let sandbox = SandboxServer(configuration: SandboxConfiguration())
        try sandbox.start()
        defer { sandbox.stop() }
        let env = ProcessInfo.processInfo.environment
        let token = try #require(try sandbox.signNotifications([
            NotificationSpec(type: "consent-revoked", sub: "000123.abc.0456", clientID: "com.example.app",
                             iat: 1_700_000_000, exp: 1_700_000_300),
        ]).first)
        let jwks = sandbox.baseURL + "/auth/keys"
        func verify(_ extra: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
            try await BinaryProcess.run(["token", "verify", token, "--client-id", "com.example.app"] + extra, environment: env)
        }
        let epoch = try await verify(["--jwks", jwks, "--at", "1700000040"])
        #expect(epoch.status == 0 && epoch.stdout.contains(#""type" : "consent-revoked""#), "\(epoch.stdout) \(epoch.stderr)")
        let later = try await verify(["--jwks", jwks, "--at", "1700003600"])
        #expect(later.status == 1 && later.stdout.hasPrefix("rejected: expired:"), "\(later.stdout)")
        let milliseconds = try await verify(["--jwks", jwks, "--at", "1700000040000"])
        #expect(milliseconds.status == 64 && milliseconds.stderr.contains("--at"), "\(milliseconds.stderr)")

        for url in ["http://appleid.apple.com/auth/keys", "http://127.0.0.1.example.com/keys", "HTTP://10.0.0.1/keys",
                    "http://user@evil.example:80/keys", "http:///keys"] {
            let refused = try await verify(["--jwks", url])
            #expect(refused.status == 64 && refused.stderr.contains("--jwks"), "\(url): \(refused.stderr)")
            #expect(refused.stdout.isEmpty)
        }
        // Loopback over http passes the check (this one then finds nothing listening: 69).
        let v6 = try await verify(["--jwks", "http://[::1]:1/auth/keys"])
        #expect(v6.status == 69, "\(v6.stderr)")
    }
}
