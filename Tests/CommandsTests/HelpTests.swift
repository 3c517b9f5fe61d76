import Commands
import Testing

@Suite struct HelpTests {
    typealias F = Fixture
    let help = HelpFormatter(programName: "tool", width: 200)

    @Test func aCommandsHelpListsEveryOptionWithHelpDefaultRangeAndEnvironment() {
        let text = help.help(for: [F.root, F.work])
        #expect(text.hasPrefix("usage: tool work [options]\n\nrun the worker\n\nRuns until stopped."))
        for line in [
            "--concurrency N", "items in flight (1...4096; default 64)",
            "--lease-seconds S", "lease length (1...3600 s; default 30)",
            "--share F", "a share (0...1)",
            "--format FMT", "output format (json|text)",
            "--team-id T", "the team (env SIWA_TEAM_ID)",
            "--created-by NAME", "creator (default $USER)",
            "--drain", "exit when idle",
            "-h, --help", "show this help",
            "environment:", "DATABASE_URL", "where PostgreSQL is",
        ] {
            #expect(text.contains(line), "\(line) missing from:\n\(text)")
        }
    }

    @Test func requiredOptionsArgumentsAndRepeatableOnesAreMarked() {
        let load = help.help(for: [F.root, F.transfer, F.load])
        #expect(load.hasPrefix("usage: tool transfer load FILE [COUNT] --job N [options]"), "\(load)")
        #expect(load.contains("arguments:") && load.contains("FILE") && load.contains("how many (1...10; optional)"))
        #expect(load.contains("the job (>= 1; required)"))
        let verify = help.help(for: [F.root, F.transfer, F.verify])
        #expect(verify.hasPrefix("usage: tool transfer verify --client-id C"), "\(verify)")
        #expect(!verify.contains("[options]"))
        #expect(verify.contains("an audience (required; repeatable)"))
    }

    @Test func theRootListsCommandsAndSubcommandsWithAbstracts() {
        let text = help.help(for: [F.root])
        #expect(text.hasPrefix("usage: tool <command> [options]\n\nA test tool."))
        #expect(text.contains("commands:\n  work"))
        #expect(text.contains("run the worker"))
        #expect(text.contains("  transfer load") && text.contains("load a file"))
        #expect(text.contains("  transfer verify") && text.contains("verify a token"))
        #expect(text.contains("run 'tool <command> --help' for its options."))
    }

    @Test func aGroupListsItsSubcommands() {
        let text = help.help(for: [F.root, F.transfer])
        #expect(text.hasPrefix("usage: tool transfer <subcommand> [options]\n\napp transfer"))
        #expect(text.contains("subcommands:\n  load") && text.contains("  verify"))
        #expect(!text.contains("options:"))
    }

    @Test func longLinesWrapUnderTheirColumn() {
        let narrow = HelpFormatter(programName: "tool", width: 40)
        let spec = CommandSpec("x", abstract: "", options: [
            Declare.switch("flag", help: "one two three four five six seven eight nine ten eleven"),
        ])
        let text = narrow.help(for: [spec])
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.allSatisfy { $0.count <= 40 }, "\(text)")
        guard let first = lines.firstIndex(where: { $0.hasPrefix("  --flag") }), first + 1 < lines.count else {
            Issue.record("no wrapped option line in:\n\(text)")
            return
        }
        let column = Array(lines[first]).firstIndex(of: "o") ?? 0   // where "one" starts
        #expect(column > "  --flag".count)
        #expect(lines[first + 1].prefix(column).allSatisfy { $0 == " " } && lines[first + 1].count > column, "\(text)")
    }
}
