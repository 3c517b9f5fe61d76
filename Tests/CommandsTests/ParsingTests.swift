import Commands
import Testing

@Suite struct ParsingTests {
    typealias F = Fixture

    @Test func defaultsApplyWhenOptionsAreAbsent() throws {
        let a = try #require(try F.parse(["work"]))
        #expect(a.path == ["work"])
        #expect(a[F.concurrency] == 64)
        #expect(a[F.lease] == .seconds(30))
        #expect(a[F.share] == nil && a[F.team] == nil && a[F.format] == nil)
        #expect(a[F.drain] == false)
        #expect(!a.isGiven(F.concurrency))
    }

    @Test func everySyntaxOfTodayIsAccepted() throws {
        let a = try #require(try F.parse([
            "work", "--concurrency", "8", "--lease-seconds=2.5", "--share", "0.25", "--latency-ms=50", "--format", "text",
            "--team-id", "ABCDE12345", "--drain",
        ]))
        #expect(a[F.concurrency] == 8)
        #expect(a[F.lease] == .milliseconds(2500))
        #expect(a[F.share] == 0.25)
        #expect(a[F.latency] == 50)
        #expect(a[F.format] == "text")
        #expect(a[F.team] == "ABCDE12345")
        #expect(a[F.drain] && a.isGiven(F.concurrency))
    }

    /// A value option given twice is refused (no value silently wins); a switch given twice is
    /// still on.
    @Test func aValueOptionGivenTwiceIsRefusedAndASwitchTwiceIsOn() throws {
        #expect(throws: UsageError("--concurrency is given more than once; give it once", commandPath: ["work"])) {
            try F.parser.parse(["work", "--concurrency", "8", "--concurrency=9"])
        }
        let a = try #require(try F.parse(["work", "--drain", "--concurrency", "8", "--drain"]))
        #expect(a[F.drain] && a[F.concurrency] == 8)
    }

    @Test func repeatableOptionsKeepEveryValueInOrder() throws {
        let a = try #require(try F.parse(["transfer", "verify", "--client-id", "a", "--client-id=b", "--client-id", "c"]))
        #expect(a[F.client] == ["a", "b", "c"])
    }

    @Test func positionalsAreMatchedInOrderAndMayMixWithOptions() throws {
        let a = try #require(try F.parse(["transfer", "load", "--job", "3", "in.csv", "--drain", "7"]))
        #expect(a.path == ["transfer", "load"])
        #expect(try a.required(F.file) == "in.csv")
        #expect(a[F.count] == 7)
        #expect(try a.required(F.job) == 3)
        let optional = try #require(try F.parse(["transfer", "load", "in.csv", "--job=1"]))
        #expect(optional[F.count] == nil)
    }

    @Test func optionsBeforeTheSubcommandAreMovedAfterIt() throws {
        let a = try #require(try F.parse(["transfer", "--job", "5", "load", "x.csv"]))
        #expect(a.path == ["transfer", "load"])
        #expect(a[F.job] == 5)
        #expect(a[F.file] == "x.csv")
    }

    @Test func doubleDashEndsTheOptions() throws {
        let a = try #require(try F.parse(["transfer", "load", "--job", "1", "--", "--odd-name.csv"]))
        #expect(a[F.file] == "--odd-name.csv")
    }

    @Test func singleDashWordsArePositionals() throws {
        let a = try #require(try F.parse(["transfer", "load", "--job", "1", "-"]))
        #expect(a[F.file] == "-")
    }

    @Test func inlineValuesMayStartWithDashes() throws {
        let a = try #require(try F.parse(["work", "--team-id=--weird"]))
        #expect(a[F.team] == "--weird")
    }

    @Test func helpIsRecognisedAnywhere() throws {
        for words in [["--help"], ["-h"], ["help"], ["work", "--help"], ["work", "--concurrency", "8", "-h"],
                      ["transfer", "load", "--help"], ["help", "transfer", "load"], ["transfer", "--help"], ["transfer", "-h"]] {
            guard case .help(let path) = try F.parser.parse(words) else {
                Issue.record("\(words) did not ask for help")
                continue
            }
            let expected = words.filter { !$0.hasPrefix("-") && $0 != "help" && $0 != "8" }
            #expect(path.dropFirst().map(\.name) == expected, "\(words)")
        }
    }

    @Test func aRequiredValueIsReadWithRequired() throws {
        let a = try #require(try F.parse(["transfer", "load", "f", "--job", "2"]))
        #expect(try a.required(F.job) == 2)
        let other = try #require(try F.parse(["work"]))
        #expect(throws: UsageError("work: --job N is required", commandPath: ["work"])) { try other.required(F.job) }
    }
}
