import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// `accounts import` / `accounts export` through the real binary and real PostgreSQL: bad rows
/// refuse the file by line and field (or go to `--rejects`), a second load changes nothing, and
/// imported tokens validate against the sandbox.
@Suite(.serialized, .timeLimit(.minutes(20))) struct AccountImportTests {
    static func accountCount(_ world: SIWAWorld) async throws -> Int {
        try await world.database.scalar("SELECT count(*)::int FROM siwa.accounts")
    }

    /// Ten lines: good rows with bad ones at lines 4, 7 and 9 (each bad row holds a token).
    static func fileWithBadRows(_ accounts: [ImportAccount]) -> (text: String, tokens: [String]) {
        var lines = [ImportAccount.header] + accounts.prefix(9).map(\.csvLine)
        lines[3] = "bad-user-4,,\(accounts[2].token),x@example.com,true"          // sub missing
        lines[6] = "bad-user-7,0017.abc.1,r bad\(ImportAccount.tokenMarker)x,,false"  // a token with a space
        lines[8] = "bad-user-9,0019.abc.1,\(accounts[7].token),,maybe"               // not a boolean
        return (lines.joined(separator: "\n") + "\n", accounts.prefix(9).map(\.token))
    }

    @Test func badRowsInTheMiddleRefuseTheFileByLineAndFieldAndNothingIsWritten() async throws {
        let world = try await SIWAWorld.create()
        let accounts = ImportAccount.make(9)
        let file = Self.fileWithBadRows(accounts)
        let path = try world.write(file.text, name: "bad.csv")
        let run = try await world.run(["accounts", "import", path])
        #expect(run.status == 65, "\(run.stdout) \(run.stderr)")
        #expect(run.stderr.contains("'\(path)': line 4: sub: is empty"), "\(run.stderr)")
        #expect(run.stderr.contains("'\(path)': line 7: refresh_token: contains a space, control or non-ASCII character"))
        #expect(run.stderr.contains("'\(path)': line 9: is_private_email: expected true or false"))
        #expect(run.stderr.contains("refused (3 errors in 9 rows); nothing was written"), "\(run.stderr)")
        #expect(try await Self.accountCount(world) == 0)
        let audits: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.audit_log")
        #expect(audits == 0)
        let output = run.stdout + run.stderr
        #expect(!output.contains(ImportAccount.tokenMarker) && !file.tokens.contains { output.contains($0) })

        // The same file as JSON lines: the same lines refused.
        let json = accounts.prefix(3).map { #"{"external_user_id":"\#($0.user)","sub":"\#($0.sub)","refresh_token":"\#($0.token)"}"# }
            + [#"{"external_user_id":"j4","sub":"","refresh_token":"\#(accounts[3].token)"}"#, #"{"external_user_id":5,"sub":"s5","colour":"red"}"#]
        let jsonPath = try world.write(json.joined(separator: "\n") + "\n", name: "bad.jsonl")
        let jsonRun = try await world.run(["accounts", "import", jsonPath])
        #expect(jsonRun.status == 65)
        #expect(jsonRun.stderr.contains("line 4: sub: is empty") && jsonRun.stderr.contains("line 5: unknown field 'colour'"),
                "\(jsonRun.stderr)")
        #expect(!(jsonRun.stdout + jsonRun.stderr).contains(ImportAccount.tokenMarker))
        #expect(try await Self.accountCount(world) == 0)
        await world.tearDown()
    }

    @Test func rejectsLoadsTheGoodRowsAndWritesTheBadOnesWithTheirReasons() async throws {
        let world = try await SIWAWorld.create()
        let accounts = ImportAccount.make(10)
        var file = Self.fileWithBadRows(accounts).text
        file += accounts[0].csvLine.replacingOccurrences(of: accounts[0].sub, with: "0011.other.1") + "\n"   // line 11: user of line 2 again
        let path = try world.write(file, name: "mixed.csv")
        let rejects = world.directory.appendingPathComponent("rejects.csv").path
        let run = try await world.run(["accounts", "import", path, "--rejects", rejects])
        #expect(run.status == 1, "rows were rejected: \(run.stdout) \(run.stderr)")
        #expect(run.stdout.contains("imported 6 of 10 rows") && run.stdout.contains("6 inserted"), "\(run.stdout)")
        #expect(run.stdout.contains("4 rows rejected, written with their reasons to '\(rejects)'"))
        #expect(try await Self.accountCount(world) == 6)
        let text = try String(contentsOfFile: rejects, encoding: .utf8)
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first == "line,field,reason,external_user_id,sub")
        #expect(lines.contains("4,sub,is empty,bad-user-4,"), "\(text)")
        #expect(lines.contains("7,refresh_token,\"contains a space, control or non-ASCII character\",bad-user-7,0017.abc.1"), "\(text)")
        #expect(lines.contains { $0.hasPrefix("9,is_private_email,") })
        #expect(lines.contains("11,external_user_id,duplicate of line 2,\(accounts[0].user),0011.other.1"), "\(text)")
        #expect(!text.contains(ImportAccount.tokenMarker), "no token in the rejects file")
        let again = try await world.run(["accounts", "import", path, "--rejects", rejects])
        #expect(again.status == 65 && again.stderr.contains("exists"), "a rejects file is never overwritten: \(again.stderr)")

        // Every row bad: the summary says nothing was written, and one reject has "its reason".
        let allBad = try world.write([ImportAccount.header, "only-user,,,,"].joined(separator: "\n") + "\n", name: "all-bad.csv")
        let oneReject = world.directory.appendingPathComponent("one-reject.csv").path
        let none = try await world.run(["accounts", "import", allBad, "--rejects", oneReject])
        #expect(none.status == 1 && none.stdout.contains("imported 0 of 1 row from") && none.stdout.contains(": nothing written;")
                && none.stdout.contains("1 row rejected, written with its reason to"), "\(none.stdout)")

        // Against what is stored: a known user with another sub, and a new user with a stored sub.
        let clash = [ImportAccount.header, "\(accounts[1].user),0099.changed.1,,,", "new-user,\(accounts[0].sub),,,"]
        let clashRun = try await world.run(["accounts", "import", try world.write(clash.joined(separator: "\n"), name: "clash.csv")])
        #expect(clashRun.status == 65, "\(clashRun.stderr)")
        #expect(clashRun.stderr.contains("line 2: sub: differs from the sub of account"), "\(clashRun.stderr)")
        #expect(clashRun.stderr.contains("line 3: sub: already belongs to account"), "\(clashRun.stderr)")
        #expect(try await Self.accountCount(world) == 6)
        await world.tearDown()
    }

    /// A large import leaves the planner fresh statistics on `siwa.accounts` (a re-import right
    /// after a 1,000,000-row load otherwise looked accounts up by scans: 58 s instead of 21).
    @Test func aLargeImportAnalyzesTheAccounts() async throws {
        let world = try await SIWAWorld.create()
        let analyzed = "SELECT analyze_count::int FROM pg_stat_user_tables WHERE schemaname = 'siwa' AND relname = 'accounts'"
        #expect(try await world.database.scalar(SQL(unsafeSQL: analyzed), as: Int.self) == 0)
        let path = try world.write(ImportAccount.csv(ImportAccount.make(AccountImporter.analyzeAfter)), name: "accounts.csv")
        let run = try await world.run(["accounts", "import", path, "--json"])
        #expect(run.status == 0 && run.stdout.contains(#""inserted":\#(AccountImporter.analyzeAfter)"#), "\(run.stdout) \(run.stderr)")
        try await Eventually.wait("siwa.accounts analyzed after the import") {
            try await world.database.scalar(SQL(unsafeSQL: analyzed), as: Int.self) == 1
        }
        await world.tearDown()
    }

    @Test func reimportChangesNothingAndImportedTokensValidate() async throws {
        let world = try await SIWAWorld.create()
        var accounts = ImportAccount.make(300)
        ImportAccount.register(accounts, in: world.sandbox)
        let path = try world.write(ImportAccount.csv(accounts), name: "accounts.csv")
        let first = try await world.run(["accounts", "import", path, "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains(#""changed":300"#) && first.stdout.contains(#""tokens_sealed":300"#), "\(first.stdout)")
        let snapshot = "SELECT md5(string_agg(id || ':' || encode(refresh_token_ciphertext, 'hex') || ':' || updated_at, ',' ORDER BY id)) FROM siwa.accounts"
        let before: String = try await world.database.scalar(SQL(unsafeSQL: snapshot))

        let second = try await world.run(["accounts", "import", path])
        #expect(second.status == 0 && second.stdout.contains("0 rows changed"), "\(second.stdout) \(second.stderr)")
        #expect(second.stdout.contains("0 refresh tokens encrypted"))
        let after: String = try await world.database.scalar(SQL(unsafeSQL: snapshot))
        #expect(before == after, "a second load leaves every row as it was, ciphertexts included")

        // Export, then import the export: the same accounts, nothing changes.
        let exported = world.directory.appendingPathComponent("export.csv").path
        let export = try await world.run(["accounts", "export", "--out", exported])
        #expect(export.status == 0 && export.stdout.contains("exported 300 accounts"), "\(export.stderr)")
        let exportText = try String(contentsOfFile: exported, encoding: .utf8)
        #expect(exportText.hasPrefix("external_user_id,sub,email,is_private_email,token_checked_at\n"))
        #expect(!exportText.contains(ImportAccount.tokenMarker))
        let roundTrip = try await world.run(["accounts", "import", exported, "--json"])
        #expect(roundTrip.status == 0 && roundTrip.stdout.contains(#""changed":0"#), "\(roundTrip.stdout)")

        // One email and one token change: exactly those two rows are updated.
        accounts[5].email = "changed@example.com"
        accounts[6].token = ImportAccount.newToken()
        ImportAccount.register([accounts[6]], in: world.sandbox)
        try Data(ImportAccount.csv(accounts).utf8).write(to: URL(fileURLWithPath: path))
        let third = try await world.run(["accounts", "import", path, "--json"])
        #expect(third.stdout.contains(#""updated":2"#) && third.stdout.contains(#""unchanged":298"#)
                && third.stdout.contains(#""tokens_sealed":1"#), "\(third.stdout)")

        // Every imported token decrypts, and Apple (the sandbox) finds it valid.
        let job = try await world.enqueue()
        let work = try await world.run(["work", "--drain"])
        #expect(work.status == 0, "\(work.stderr.suffix(1500))")
        let valid: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.results WHERE job_id = \(job.jobID) AND outcome = 'valid'")
        #expect(valid == 300)
        await world.tearDown()
    }
}
