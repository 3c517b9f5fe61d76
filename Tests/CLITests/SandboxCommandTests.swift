import Commands
import Sandbox
import SIWAJobs
import Testing
@testable import siwa_jobs

/// `siwa-jobs sandbox`'s declared flags build a `SandboxConfiguration` (these replace the
/// sandbox's own parser tests: the sandbox no longer parses flags).
@Suite struct SandboxCommandTests {
    private func configuration(_ flags: [String]) throws -> SandboxConfiguration {
        guard case .run(let arguments) = try CommandParser(root: CommandTree.root).parse(["sandbox"] + flags) else {
            throw UsageError("asked for help")
        }
        return try SandboxCommand.configuration(arguments)
    }

    @Test func defaults() throws {
        let c = try configuration([])
        #expect(c == SandboxConfiguration())
        #expect(c.host == "127.0.0.1")
        #expect(c.port == 0)
        #expect(c.latency == .none)
        #expect(c.threads == 2)
        #expect(c.seed == nil)
    }

    @Test func everyFlag() throws {
        let c = try configuration([
            "--port", "8089", "--host", "127.0.0.2", "--latency-ms", "50", "--latency-jitter-ms=10",
            "--fault-5xx", "0.01", "--fault-429", "0.02", "--retry-after", "3", "--fault-reset", "0.03",
            "--fault-stall", "0.04", "--stall-seconds", "2.5", "--fault-html", "0.05", "--fault-truncated", "0.06",
            "--threads", "4", "--seed", "99", "--rsa-bits", "3072", "--refresh-id-token", "off",
        ])
        #expect(c.port == 8089)
        #expect(c.host == "127.0.0.2")
        #expect(c.latency == .normal(50, 10))
        #expect(c.faults == FaultRates(serverError: 0.01, tooManyRequests: 0.02, retryAfterSeconds: 3, connectionReset: 0.03,
                                       stall: 0.04, stallSeconds: 2.5, htmlError: 0.05, truncatedJSON: 0.06))
        #expect(c.threads == 4)
        #expect(c.seed == 99)
        #expect(c.rsaBits == 3072)
        #expect(c.refreshIDToken == false)
        #expect(try configuration(["--host", "localhost"]).host == "127.0.0.1")
    }

    @Test func rateLimitFlags() throws {
        #expect(try configuration([]).rateLimit == nil)
        #expect(try configuration(["--rate-limit", "250"]).rateLimit == RateLimitSettings(rps: 250, burst: 25, retryAfterSeconds: 1))
        #expect(try configuration(["--rate-limit", "250", "--rate-burst", "100", "--rate-retry-after", "3"]).rateLimit
            == RateLimitSettings(rps: 250, burst: 100, retryAfterSeconds: 3))
        #expect(try configuration(["--rate-limit", "0"]).rateLimit == nil)
        #expect(throws: UsageError.self) { try configuration(["--rate-burst", "10"]) }
        #expect(throws: UsageError.self) { try configuration(["--rate-limit", "-5"]) }
    }

    @Test func tlsFlags() throws {
        #expect(try configuration([]).tls == nil, "plain HTTP unless asked")
        #expect(try configuration(["--tls"]).tls == SandboxTLS())
        #expect(try configuration(["--tls", "--tls-dir", "/tmp/x", "--tls-server-name", "other.example", "--tls-expired"]).tls
            == SandboxTLS(directory: "/tmp/x", serverName: "other.example", expired: true))
    }

    @Test(arguments: [
        (["--latency-ms", "50"], LatencyDistribution.fixed(50)),
        (["--latency-ms", "0"], .none),
        (["--latency", "uniform:10-90"], .uniform(10, 90)),
        (["--latency", "normal:50,5"], .normal(50, 5)),
        (["--latency", "fixed:20"], .fixed(20)),
        (["--latency", "none"], .none),
    ])
    func latencyForms(_ args: [String], _ expected: LatencyDistribution) throws {
        #expect(try configuration(args).latency == expected)
    }

    @Test(arguments: [
        (["--fault-429", "1.5"], "--fault-429: expected a fraction from 0 to 1, got '1.5'"),
        (["--fault-5xx", "abc"], "--fault-5xx: expected a fraction from 0 to 1, got 'abc'"),
        (["--port", "70000"], "--port: expected a whole number from 0 to 65535, got '70000'"),
        (["--threads", "0"], "--threads: expected a whole number from 1 to 64, got '0'"),
        (["--port"], "--port needs a value"),
        (["--host", "0.0.0.0"], "--host: expected an IPv4 loopback address such as 127.0.0.1, got '0.0.0.0'"),
        (["--seed", "-1"], "--seed: expected an unsigned 64-bit integer, got '-1'"),
        (["--latency", "uniform:90-10"], "--latency: expected a uniform minimum that does not exceed its maximum, got 'uniform:90-10'"),
        (["--latency", "gamma:3"],
         "--latency: expected none, fixed:MS, uniform:MIN-MAX or normal:MEAN,STDDEV (milliseconds), got 'gamma:3'"),
        (["--refresh-id-token", "maybe"], "--refresh-id-token: expected on or off, got 'maybe'"),
        (["--latency-jitter-ms", "5"], "--latency-jitter-ms: requires --latency-ms"),
        (["--latency-ms", "5", "--latency", "none"], "--latency: cannot be combined with --latency-ms"),
        (["--fault-429", "0.6", "--fault-5xx", "0.6"], "--fault-*: fault probabilities must sum to at most 1 (got 1.2)"),
        (["--tls-dir", "/tmp/x"], "--tls-dir: requires --tls"),
        (["--tls-server-name", "x.example"], "--tls-server-name: requires --tls"),
        (["--tls-expired"], "--tls-expired: requires --tls"),
    ])
    func badFlagsNameTheFlagAndValue(_ args: [String], _ message: String) {
        #expect(throws: UsageError(message, commandPath: ["sandbox"])) { _ = try configuration(args) }
    }

    @Test func anUnknownFlagIsRefusedByName() {
        #expect(throws: UsageError.self) { _ = try configuration(["--bogus", "1"]) }
        do { _ = try configuration(["--bogus", "1"]) } catch let error as UsageError {
            #expect(error.message.hasPrefix("unknown option --bogus (known: --fault-429, --fault-5xx,"))
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func theCommandExits64OnAUsageError() async {
        let code = await SIWAJobsCommand.run(["sandbox", "--fault-429", "2"], configuration: SIWAConfiguration(environment: [:]))
        #expect(code == .usage)
    }
}
