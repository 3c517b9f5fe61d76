import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// The hand-off file: parser rules (pure), and the loader against real PostgreSQL — every malformed
/// file gets line-numbered errors and leaves nothing behind.
@Suite(.timeLimit(.minutes(20))) struct TransferCSVParserTests {
    func parse(_ text: [UInt8], chunk: Int = 1 << 20) -> [TransferCSVParser.Event] {
        var parser = TransferCSVParser()
        var events: [TransferCSVParser.Event] = []
        var i = 0
        while i < text.count {
            parser.feed(Array(text[i..<min(i + chunk, text.count)])) { events.append($0) }
            i += chunk
        }
        parser.finish { events.append($0) }
        return events
    }

    func parse(_ text: String, chunk: Int = 1 << 20) -> [TransferCSVParser.Event] { parse(Array(text.utf8), chunk: chunk) }

    @Test(arguments: [1, 2, 3, 7, 1 << 20])
    func rowsAreTheSameWhateverTheChunking(chunk: Int) {
        let text = "\u{FEFF}external_user_id,transfer_sub\r\nu1,001.a.1\r\n\"u,2\",001.b.2\r\n\r\n\"u\"\"3\",\"001.c.3\"\r\n\"multi\nline\",001.d.4\r\nu9,001.e.5"
        #expect(parse(text, chunk: chunk) == [
            .row(line: 2, externalUserID: "u1", transferSub: "001.a.1"),
            .row(line: 3, externalUserID: "u,2", transferSub: "001.b.2"),
            .row(line: 5, externalUserID: "u\"3", transferSub: "001.c.3"),
            .error(line: 6, message: "external_user_id contains a control character"),   // a quoted newline spans lines 6-7
            .row(line: 8, externalUserID: "u9", transferSub: "001.e.5"),
        ])
    }

    @Test func badRowsCarryTheirLineNumber() {
        let text = "external_user_id,transfer_sub\nu1,001.a.1\nu2\nu3,\n,001.x.9\nu4,001.b 2\nu5,001.c.3,extra\nu\"6,001.d.4\nu7,\"001.e.5\"x\nu8,001.f.6\rX\n"
        let errors = parse(text).compactMap { event -> String? in
            if case let .error(line, message) = event { return "\(line): \(message)" }
            return nil
        }
        #expect(errors == [
            "3: expected 2 columns (external_user_id,transfer_sub), found 1",
            "4: transfer_sub is empty",
            "5: external_user_id is empty",
            "6: transfer_sub contains a space, control or non-ASCII character",
            "7: expected 2 columns (external_user_id,transfer_sub), found 3",
            "8: a quote inside an unquoted field (quote the whole field and double the quote)",
            "9: characters after a closing quote",
            "10: a carriage return is not followed by a line feed",
        ])
    }

    @Test func headerEmptyFileUTF16AndUnclosedQuotes() {
        #expect(parse("user,sub\nu1,s1\n").first == .error(line: 1, message: "expected the header 'external_user_id,transfer_sub', found 'user,sub'"))
        #expect(parse("") == [.error(line: 1, message: "the file is empty: expected the header 'external_user_id,transfer_sub'")])
        #expect(parse([0xFF, 0xFE, 0x65, 0x00]).first == .error(line: 1, message: "the file is UTF-16 (byte-order mark FF FE or FE FF): save it as UTF-8"))
        // UTF-16 without a byte-order mark: NUL bytes between the letters.
        let utf16LE = Array("external_user_id,transfer_sub\n".utf8).flatMap { [$0, 0x00] as [UInt8] }
        #expect(parse(utf16LE) == [.error(line: 1, message: "the file starts with NUL bytes: it looks like UTF-16 without a byte-order mark; save it as UTF-8")])
        #expect(parse(Array(utf16LE.dropFirst())).first == parse(utf16LE).first, "big-endian too")
        #expect(parse("external_user_id,transfer_sub\n\"u1,001.a.1\n").last == .error(line: 2, message: "a quoted field is not closed before the end of the file"))
        #expect(parse([Array("external_user_id,transfer_sub\nu".utf8), [0xC3, 0x28], Array(",001.a.1\n".utf8)].flatMap { $0 })
            == [.error(line: 2, message: "not valid UTF-8")])
    }

    @Test func aHeaderErrorEscapesControlAndInvalidBytes() {
        let header: [UInt8] = Array("exter".utf8) + [0x00, 0x1B] + Array("[2J,sub".utf8) + [0x7F, 0xFF] + Array("\u{202E}é".utf8) + [0x0A]
        #expect(parse(header + Array("u1,s1\n".utf8)).first
            == .error(line: 1, message: "expected the header 'external_user_id,transfer_sub', found 'exter\\x00\\x1B[2J,sub\\x7F\\xFF\\xE2\\x80\\xAEé'"))
        #expect(TransferCSVParser.escaped(Array(repeating: 0x41, count: 100), limit: 80) == String(repeating: "A", count: 80) + "...")
    }
}

@Suite(.serialized, .timeLimit(.minutes(20))) struct TransferCSVLoaderTests {
    typealias W = TransferWorld

    func load(_ world: W, _ bytes: [UInt8], name: String = "handoff.csv") async throws -> (status: Int32, stdout: String, stderr: String) {
        let path = world.directory.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return try await world.run(["transfer", "import-csv", path, "--team-id", W.teamB, "--client-id", W.clientID,
                                    "--transfer-date", world.today, "--source-team-id", W.teamA])
    }

    func nothingLeft(_ world: W) async throws -> Bool {
        let imports: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.transfer_imports")
        let rows: Int = try await world.database.scalar("SELECT count(*)::int FROM siwa.transfer_import_rows")
        return imports == 0 && rows == 0
    }

    @Test func malformedFilesGetLineNumberedErrorsAndLeaveNothingBehind() async throws {
        let world = try await W.create()
        var good = "external_user_id,transfer_sub\n"
        for i in 1...2_000 { good += "user-\(i),000\(i).abcdef.\(i)\n" }
        let cases: [(String, [UInt8], [String])] = [
            ("wrong column count", Array((good + "user-x,1.2.3,extra\nuser-y\n").utf8),
             ["line 2002: expected 2 columns (external_user_id,transfer_sub), found 3", "line 2003: expected 2 columns"]),
            ("empty transfer_sub", Array((good + "user-z,\n").utf8), ["line 2002: transfer_sub is empty"]),
            ("duplicate rows", Array((good + "user-5,0005.abcdef.5\nuser-2001,0007.abcdef.7\n").utf8),
             ["line 6: duplicate transfer_sub (appears 2 times, on lines 6, 2002)", "line 8: duplicate transfer_sub (appears 2 times, on lines 8, 2003)",
              "line 6: duplicate external_user_id (appears 2 times, on lines 6, 2002)"]),
            ("UTF-16 byte-order mark", [0xFF, 0xFE] + Array(good.utf8), ["line 1: the file is UTF-16"]),
            ("bare CR line endings", Array(good.replacingOccurrences(of: "\n", with: "\r").utf8),
             ["line 1: a carriage return is not followed by a line feed"]),
            ("header only", Array("external_user_id,transfer_sub\n".utf8), ["line 2: the file has a header but no rows"]),
            ("UTF-16 without byte-order mark", Array(good.utf8).flatMap { [$0, 0x00] as [UInt8] }, ["line 1: the file starts with NUL bytes"]),
            ("control bytes in the header", [0x1B, 0x5D, 0x41, 0x42, 0x00] + Array(good.utf8), ["found '\\x1B]AB\\x00external_user_id"]),
        ]
        for (what, bytes, expected) in cases {
            let run = try await load(world, bytes)
            #expect(run.status == 65, "\(what): \(run.stdout) \(run.stderr)")
            for message in expected {
                #expect(run.stderr.contains(message), "\(what): missing '\(message)' in \(run.stderr.prefix(1500))")
            }
            #expect(run.stderr.contains("nothing was loaded"), "\(what)")
            #expect(!run.stderr.utf8.contains { $0 < 0x20 && $0 != 0x0A }, "\(what): no raw control byte reaches the terminal")
            #expect(try await nothingLeft(world), "\(what) left rows behind")
        }
        let missing = try await world.run(["transfer", "import-csv", "/nonexistent/file.csv", "--team-id", W.teamB,
                                           "--client-id", W.clientID, "--transfer-date", world.today])
        #expect(missing.status == 66 && missing.stderr.contains("'/nonexistent/file.csv' cannot be read: no such file or directory"),
                "\(missing.stderr)")
        #expect(try await nothingLeft(world))
        await world.tearDown()
    }

    @Test func aByteOrderMarkAndCRLFAreHandledAndSaidSo() async throws {
        let world = try await W.create()
        let text = "\u{FEFF}External_User_ID , transfer_sub\r\nuser-1,001.a.1\r\n\"user,2\",001.b.2\r\n"
        let run = try await load(world, Array(text.utf8))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("note: line 1: a UTF-8 byte-order mark at the start was skipped"))
        #expect(run.stdout.contains("note: line 1: CRLF line endings (Windows) were accepted"))
        #expect(run.stdout.contains("loaded import 1: 2 rows"))
        let rows = try await world.database.pool.query("""
            SELECT line_no, external_user_id, transfer_sub FROM siwa.transfer_import_rows ORDER BY line_no
            """)
        #expect(try rows.map { "\(try $0.decode("line_no", as: Int.self)) \(try $0.decode("external_user_id", as: String.self)) \(try $0.decode("transfer_sub", as: String.self))" }
            == ["2 user-1 001.a.1", "3 user,2 001.b.2"])
        await world.tearDown()
    }

    @Test func duringTheWindowTheTransferSubClaimFindsTheAccount() async throws {
        let world = try await W.create()
        let users = try await world.seedSender(count: 3)
        try await world.database.pool.execute("""
            INSERT INTO siwa.jobs (id, kind, spec) OVERRIDING SYSTEM VALUE VALUES (900, 'transfer-export', '{}');
            """)
        try await world.database.pool.execute("""
            INSERT INTO siwa.transfer_jobs (job_id, direction, team_id, client_id, peer_team_id, transfer_date, canary_size, canary_remaining)
            VALUES (900, 'export', \(W.teamA), \(W.clientID), \(W.teamB), current_date - 5, 0, 0)
            """)
        try await world.database.pool.execute("""
            INSERT INTO siwa.transfer_subs (account_id, target_team_id, transfer_sub, job_id) VALUES (1, \(W.teamB), 'ts.sender.1', 900)
            """)
        _ = try await load(world, Array("external_user_id,transfer_sub\nuser-000002,ts.file.2\n".utf8))
        func lookup(_ claim: String) async throws -> [String] {
            try await world.database.pool.query("""
                SELECT external_user_id, matched_via, days_left FROM siwa.account_by_transfer_sub(\(W.teamB), \(claim))
                """).map { "\(try $0.decode("external_user_id", as: String.self)) \(try $0.decode("matched_via", as: String.self)) \(try $0.decode("days_left", as: Int?.self).map(String.init) ?? "-")" }
        }
        #expect(try await lookup("ts.sender.1") == ["\(users[0].externalUserID) sender 55"])
        #expect(try await lookup("ts.file.2") == ["user-000002 import 60"])
        #expect(try await lookup("unknown").isEmpty)
        #expect(try await lookup("ts.sender.1").count == 1)
        let cli = try await world.run(["transfer", "lookup", "--team-id", W.teamB, "--transfer-sub", "ts.file.2"])
        #expect(cli.status == 0 && cli.stdout.contains("via=import"), "\(cli.stdout) \(cli.stderr)")
        // Once the recipient's account carries the claim, it wins.
        try await world.database.pool.execute("""
            INSERT INTO siwa.accounts (external_user_id, team_id, client_id, sub, transfer_sub)
            VALUES ('user-000001', \(W.teamB), \(W.clientID), 'new.sub.1', 'ts.sender.1')
            """)
        #expect(try await lookup("ts.sender.1") == ["user-000001 recipient -", "\(users[0].externalUserID) sender 55"],
                "recipient first, by ORDER BY (migration 0007)")
        // After the window only the recipient's own account is found.
        try await world.database.pool.execute("UPDATE siwa.transfer_jobs SET transfer_date = current_date - 61")
        try await world.database.pool.execute("UPDATE siwa.transfer_imports SET transfer_date = current_date - 61")
        #expect(try await lookup("ts.file.2").isEmpty)
        await world.tearDown()
    }
}
