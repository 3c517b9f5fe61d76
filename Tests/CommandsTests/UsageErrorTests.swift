import Commands
import Testing

/// Every usage error is generated from the declaration and names the flag or argument.
@Suite struct UsageErrorTests {
    typealias F = Fixture

    @Test(arguments: [
        (["work", "--concurency", "8"],
         "unknown option --concurency (known: --concurrency, --created-by, --drain, --format, --latency-ms, --lease-seconds, "
            + "--share, --team-id)"),
        (["work", "--concurrency"], "--concurrency needs a value"),
        (["work", "--concurrency", "--drain"], "--concurrency needs a value"),
        (["work", "--drain=yes"], "--drain takes no value"),
        (["work", "--concurrency", "lots"], "--concurrency: expected a whole number from 1 to 4096, got 'lots'"),
        (["work", "--concurrency", "0"], "--concurrency: expected a whole number from 1 to 4096, got '0'"),
        (["work", "--concurrency", "99999"], "--concurrency: expected a whole number from 1 to 4096, got '99999'"),
        (["work", "--lease-seconds", "0.5"], "--lease-seconds: expected seconds from 1 to 3600, got '0.5'"),
        (["work", "--lease-seconds", "inf"], "--lease-seconds: expected seconds from 1 to 3600, got 'inf'"),
        (["work", "--share", "1.5"], "--share: expected a fraction from 0 to 1, got '1.5'"),
        (["work", "--latency-ms", "-1"], "--latency-ms: expected a number from 0 to 600000, got '-1'"),
        (["work", "--format", "xml"], "--format: expected one of json, text, got 'xml'"),
        (["work", "--team-id", ""], "--team-id: empty value"),
        (["work", "--team-id", "  "], "--team-id: empty value"),
        (["work", "extra"], "work: unexpected argument 'extra'"),
        (["work", "--team-id", "A", "--concurrency", "8", "--team-id", "B"], "--team-id is given more than once; give it once"),
        (["work", "--concurrency=8", "--concurrency", "8"], "--concurrency is given more than once; give it once"),
        (["transfer", "load", "f"], "transfer load: --job N is required"),
        (["transfer", "load", "--job", "1"], "transfer load: FILE is required"),
        (["transfer", "load", "--job", "1", "f", "11"], "transfer load: COUNT: expected a whole number from 1 to 10, got '11'"),
        (["transfer", "load", "--job", "1", "f", "2", "3"], "transfer load: unexpected argument '3'"),
        (["transfer", "load", "--job", "0", "f"], "--job: expected a whole number of at least 1, got '0'"),
        (["transfer", "verify"], "transfer verify: --client-id C is required"),
        (["transfer"], "transfer: expected a subcommand: load, verify"),
        (["transfer", "--job", "1"], "transfer: expected a subcommand: load, verify"),
        (["transfer", "bogus"], "transfer: unknown subcommand 'bogus' (expected one of: load, verify)"),
        (["bogus"], "unknown command 'bogus' (expected one of: work, transfer)"),
        (["help", "bogus"], "unknown command 'bogus' (expected one of: work, transfer)"),
    ])
    func namesTheFlag(_ words: [String], _ message: String) {
        #expect(F.error(words) == message)
    }

    @Test func errorsCarryTheCommandPath() {
        do {
            _ = try F.parser.parse(["transfer", "load", "--nope"])
            Issue.record("parsed")
        } catch {
            #expect(error.commandPath == ["transfer", "load"])
            #expect(error.message.hasPrefix("unknown option --nope"))
        }
    }

    @Test func aCustomTypeSaysWhatItExpected() throws {
        let even = Declare.option("even", "N", .custom("an even number") { Int($0).flatMap { $0 % 2 == 0 ? $0 : nil } },
                                  help: "an even number")
        let parser = CommandParser(root: CommandSpec("x", abstract: "", options: [even]))
        #expect(throws: UsageError("--even: expected an even number, got '3'")) { try parser.parse(["--even", "3"]) }
        guard case .run(let a) = try parser.parse(["--even", "4"]) else { Issue.record("no run"); return }
        #expect(a[even] == 4)
    }

    @Test func parsedArgumentsMakeCommandErrors() throws {
        let a = try #require(try F.parse(["work"]))
        #expect(a.usageError("--a: needs --b") == UsageError("--a: needs --b", commandPath: ["work"]))
    }
}
