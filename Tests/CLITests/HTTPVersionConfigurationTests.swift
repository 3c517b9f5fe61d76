import AppleID
import Commands
import SIWAJobs
import Testing
@testable import siwa_jobs

/// `SIWA_HTTP_VERSION` and `work --http-version`: the HTTP version toward Apple.
@Suite struct HTTPVersionConfigurationTests {
    private func version(_ text: String?) throws -> HTTPVersion {
        try SIWAConfiguration(environment: text.map { ["SIWA_HTTP_VERSION": $0] } ?? [:]).appleHTTPVersion()
    }

    @Test func theVariableChoosesTheVersionAndUnsetIsTheDefault() throws {
        #expect(try version(nil) == .default)
        #expect(try version("") == .default)
        #expect(try version("1.1") == .http1_1)
        #expect(try version(" 2 ") == .http2)
        #expect(try version("h2") == .http2)
    }

    @Test func aBadValueIsAConfigurationErrorNamingTheVariable() {
        for bad in ["3", "1.0", "http2", "yes"] {
            #expect(configurationFailure { try version(bad) } == "SIWA_HTTP_VERSION: expected 1.1 or 2, got '\(bad)'")
        }
    }

    @Test func theWorkFlagTakesOnlyTheTwoVersions() throws {
        func parse(_ flags: [String]) throws -> String? {
            guard case .run(let arguments) = try CommandParser(root: CommandTree.root).parse(["work"] + flags) else {
                throw UsageError("asked for help")
            }
            return arguments[WorkCommand.httpVersion]
        }
        #expect(try parse([]) == nil)
        #expect(try parse(["--http-version", "2"]) == "2")
        #expect(try parse(["--http-version=1.1"]) == "1.1")
        #expect(throws: UsageError.self) { try parse(["--http-version", "3"]) }
    }
}
