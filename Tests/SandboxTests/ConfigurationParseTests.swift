import Testing
@testable import Sandbox

@Suite struct ConfigurationParseTests {
    @Test func defaults() throws {
        let c = try SandboxConfiguration.parse(arguments: [])
        #expect(c == SandboxConfiguration())
        #expect(c.host == "127.0.0.1")
        #expect(c.port == 0)
        #expect(c.latency == .none)
        #expect(c.threads == 2)
        #expect(c.seed == nil)
    }

    @Test func everyFlag() throws {
        let c = try SandboxConfiguration.parse(arguments: [
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
        #expect(try SandboxConfiguration.parse(arguments: args).latency == expected)
    }

    @Test(arguments: [
        (["--fault-429", "1.5"], "--fault-429: invalid value '1.5': expected a probability between 0 and 1"),
        (["--fault-5xx", "abc"], "--fault-5xx: invalid value 'abc': expected a probability between 0 and 1"),
        (["--port", "70000"], "--port: invalid value '70000': expected an integer in 0...65535"),
        (["--threads", "0"], "--threads: invalid value '0': expected an integer in 1...64"),
        (["--port"], "--port: missing value"),
        (["--bogus", "1"], "--bogus: unknown flag (see --help)"),
        (["--host", "0.0.0.0"], "--host: invalid value '0.0.0.0': expected an IPv4 loopback address such as 127.0.0.1"),
        (["--seed", "-1"], "--seed: invalid value '-1': expected an unsigned 64-bit integer"),
        (["--latency", "uniform:90-10"], "--latency: invalid value 'uniform:90-10': uniform minimum must not exceed maximum"),
        (["--latency", "gamma:3"],
         "--latency: invalid value 'gamma:3': expected none, fixed:MS, uniform:MIN-MAX or normal:MEAN,STDDEV (milliseconds)"),
        (["--refresh-id-token", "maybe"], "--refresh-id-token: invalid value 'maybe': expected on or off"),
        (["--latency-jitter-ms", "5"], "--latency-jitter-ms: requires --latency-ms"),
        (["--fault-429", "0.6", "--fault-5xx", "0.6"], "--fault-*: invalid value '1.2': fault probabilities must sum to at most 1"),
    ])
    func badFlagsNameTheFlagAndValue(_ args: [String], _ message: String) {
        #expect {
            _ = try SandboxConfiguration.parse(arguments: args)
        } throws: { error in
            (error as? SandboxUsageError)?.description == message
        }
    }

    @Test func mainReturns64OnUsageError() async {
        #expect(await SandboxMain.run(arguments: ["--fault-429", "2"]) == 64)
    }
}
