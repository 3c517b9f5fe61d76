import Commands
import Testing

/// The shapes the parser checks for Apple identifiers, URLs and output paths: a malformed value is a
/// usage error naming the flag (exit 64), before any database or network call.
@Suite struct FormatValueTypeTests {
    static let teamID = ValueType<String>.appleTenCharacterID("Team ID", from: "copy it from the team's membership page")

    @Test(arguments: ["ABCDE12345", "0000000000", "ZZZZZZZZZZ"])
    func tenCharacterIDsAreAccepted(_ text: String) throws {
        #expect(try Self.teamID(text) == text)
    }

    @Test(arguments: ["abcde12345", "ABCDE1234", "ABCDE123456", "ABCDE 1234", "ABCDE-1234", "ÄBCDE12345", "ABCDE1234\n"])
    func malformedIDsSayWhatWasExpected(_ text: String) {
        #expect(throws: ValueError(expected: "a 10-character Apple Team ID (A-Z and 0-9; copy it from the team's membership page)")) {
            try Self.teamID(text)
        }
    }

    @Test(arguments: [("http://127.0.0.1:8080", "http://127.0.0.1:8080"), ("https://localhost/", "https://localhost"),
                      ("HTTP://127.0.0.1:1/base", "HTTP://127.0.0.1:1/base")])
    func httpURLsAreAcceptedWithoutATrailingSlash(_ text: String, _ value: String) throws {
        #expect(try ValueType<String>.httpURL(text) == value)
    }

    @Test(arguments: ["ftp://x", "http://", "notaurl", "127.0.0.1:8080", "http:///path", "http://h/?q=1", "http://h/#f",
                      "http://127.0.0.1:99999", "http://127.0.0.1:0"])
    func otherURLsAreRefused(_ text: String) {
        #expect(throws: ValueError(expected: "an http:// or https:// URL with a host (and a port from 1 to 65535 if any), "
                                       + "e.g. http://127.0.0.1:8080")) {
            try ValueType<String>.httpURL(text)
        }
    }

    /// A user name or password in a URL is refused, and the message shows the URL without it.
    @Test(arguments: ["http://u:s3cret@127.0.0.1:1", "ftp://u:s3cret@h/", "https://s3cret@h", "http://u:s3cret#@127.0.0.1:1",
                      "u:s3cret@127.0.0.1:1", "http://u:s3/cret@[::1"])
    func aURLWithAPasswordIsRefusedWithoutEchoingIt(_ text: String) {
        let parser = CommandParser(root: CommandSpec("x", abstract: "", options: [Declare.option("sandbox", "URL", .httpURL, help: "")]))
        do {
            _ = try parser.parse(["--sandbox", text])
            Issue.record("parsed \(text)")
        } catch {
            #expect(error.message.hasPrefix("--sandbox: expected an http:// or https:// URL without a user name or password, got '"))
            #expect(error.message.contains("***@") && !error.message.contains("s3cret"), "\(error.message)")
        }
    }

    /// Refused values are quoted with control characters escaped and at most 60 characters; an
    /// unexpected long argument (a token pasted in the wrong place) is described, not echoed.
    @Test func refusedValuesAreQuotedSafely() {
        let parser = CommandParser(root: CommandSpec("x", abstract: "", options: [Declare.option("team-id", "T", Self.teamID, help: "")]))
        #expect(throws: UsageError("--team-id: expected a 10-character Apple Team ID (A-Z and 0-9; copy it from the team's "
                                   + "membership page), got 'AB\\nC\\u{1B}[31m'")) { try parser.parse(["--team-id", "AB\nC\u{1B}[31m"]) }
        let long = String(repeating: "Z", count: 5000)
        do {
            _ = try parser.parse(["--team-id", long])
            Issue.record("parsed")
        } catch {
            #expect(error.message.hasSuffix("got '\(String(repeating: "Z", count: 60))'... (5000 characters)"), "\(error.message)")
        }
        let token = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiIwMDEifQ.SECRETSIGNATURE"
        do {
            _ = try parser.parse([token])
            Issue.record("parsed")
        } catch {
            #expect(error.message == "x: unexpected argument of \(token.count) characters (not shown: it may be a token or a code; "
                    + "options start with --)")
        }
        #expect(throws: UsageError("x: unexpected argument 'extra'")) { try parser.parse(["extra"]) }
        do {
            _ = try parser.parse(["--" + token])
            Issue.record("parsed")
        } catch {
            #expect(error.message.hasPrefix("unknown option of \(token.count + 0) characters (not shown)"), "\(error.message)")
        }
    }

    @Test func aFilePathIsNotStandardOutput() throws {
        #expect(try ValueType<String>.filePath("out.csv") == "out.csv")
        #expect(try ValueType<String>.filePath("./-") == "./-", "a file really named - is still reachable")
        #expect(throws: ValueError(expected: "a file path (this output cannot go to standard output)")) {
            try ValueType<String>.filePath("-")
        }
        #expect(throws: ValueError(expected: "a value", kind: .empty)) { try ValueType<String>.filePath(" ") }
    }

    @Test func theParserNamesTheFlag() {
        let team = Declare.option("team-id", "T", Self.teamID, help: "the team ID")
        let parser = CommandParser(root: CommandSpec("x", abstract: "", options: [team]))
        #expect(throws: UsageError("--team-id: expected a 10-character Apple Team ID (A-Z and 0-9; copy it from the team's "
                                   + "membership page), got 'abc'")) { try parser.parse(["--team-id", "abc"]) }
    }
}
