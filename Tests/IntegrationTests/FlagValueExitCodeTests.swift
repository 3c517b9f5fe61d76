import Foundation
import Testing

/// Through the binary: a malformed flag value is a usage error naming the flag (64) in every
/// command, while the same value from the environment is a configuration error (78); `-` is
/// standard output where a command can stream, and refused where the output must be a file; a
/// sandbox that does not answer is a service unavailable (69), not an internal error (70).
@Suite struct FlagValueExitCodeTests {
    @Test func malformedFlagValuesAreUsageErrorsInEveryCommand() async throws {
        let db = try await TestDatabase.create()
        let runs: [([String], String)] = [
            (["enqueue", "refresh-validation", "--team-id", "abc"], "--team-id: expected a 10-character Apple Team ID"),
            (["accounts", "import", "--team-id", "abc", "--client-id", "com.example.x", "/dev/null"], "--team-id: expected"),
            (["client-secret", "--key-id", "abc"], "--key-id: expected a 10-character Apple key ID"),
            (["transfer", "export", "--target", "teamb12345", "--transfer-date", "2026-01-01"], "--target: expected"),
            (["transfer", "import-csv", "/dev/null", "--transfer-date", "yesterday"], "--transfer-date: expected a date as YYYY-MM-DD"),
            (["transfer", "export", "--target", "BBBBB22222", "--transfer-date", "2026-02-30"], "--transfer-date: expected a date"),
            (["work", "--drain", "--concurrency", "8", "--concurrency", "9"], "--concurrency is given more than once"),
            (["work", "--drain", "--kinds", "bo\u{1B}[31mgus"], "--kinds: 'bo\\u{1B}[31mgus' is not a kind"),
            (["transfer", "export", "--target", "BBBBB22222", "--transfer-date", "2026-12-+1"], "--transfer-date: expected a date"),
            (["status", "--sandbox", "http://localhost:8080"], "--sandbox: expected an https:// URL, or http:// to a loopback"),
            (["status", "--sandbox", "http://user:s3cret@127.0.0.1:1"], "got 'http://***@127.0.0.1:1'"),
            (["sign-in", "--identity-token-file", "/dev/null", "--code", "c1", "--nonce-sha256", "zz"], "--nonce-sha256: expected 64 hex"),
            (["accounts", "import", "/dev/null", "--rejects", "-"], "--rejects: expected a file path"),
            (["status", "--sandbox", "ftp://x"], "--sandbox: expected an http:// or https:// URL"),
            (["seed", "--accounts", "1", "--sandbox", "127.0.0.1:8080"], "--sandbox: expected an http:// or https:// URL"),
            (["transfer", "export-csv", "--job", "1", "--out", "-"], "--out: expected a file path"),
            (["keygen", "--out", "-"], "--out: expected a file path"),
            (["enqueue", "refresh-validation", "--client-id", "com.example app"], "--client-id: expected a client ID"),
            (["accounts", "import", "/dev/null", "--client-id", "com.x\u{1}y"], "--client-id: expected a client ID"),
            (["enqueue", "noop", "--items", "1", "--created-by", "op\u{1B}[31m\nFAKE"],
             "--created-by: expected a name of at most 200 characters, without control characters"),
        ]
        for (arguments, message) in runs {
            let run = try await BinaryProcess.run(arguments, environment: db.environment)
            #expect(run.status == 64 && run.stderr.contains(message), "\(arguments): \(run.status) \(run.stderr)")
        }
        #expect(try await BinaryProcess.run(["status", "--sandbox", "http://user:s3cret@127.0.0.1:1"], environment: db.environment)
            .stderr.contains("s3cret") == false)
        // The same malformed team ID from the environment is configuration (78) in every command
        // that takes one, before any row is written (a sign-in used to be queued for team 'abc').
        var environment = db.environment
        environment["SIWA_TEAM_ID"] = "abc"
        environment["SIWA_CLIENT_ID"] = "com.example.x"
        let tokenFile = FileManager.default.temporaryDirectory.appendingPathComponent("flag-values-token-\(getpid())").path
        try Data("e30.e30.c2ln".utf8).write(to: URL(fileURLWithPath: tokenFile))
        defer { try? FileManager.default.removeItem(atPath: tokenFile) }
        for arguments in [["enqueue", "refresh-validation"], ["transfer", "export", "--target", "BBBBB22222", "--transfer-date", "2026-12-01"],
                          ["transfer", "import-csv", "/dev/null", "--transfer-date", "2026-12-01"], ["accounts", "import", "/dev/null"],
                          ["accounts", "export"], ["transfer", "lookup", "--transfer-sub", "x"],
                          ["sign-in", "--identity-token-file", tokenFile, "--code", "c1", "--timeout-seconds", "1"]] {
            var env = environment
            if arguments.first == "accounts" { env["SIWA_TOKEN_KEY"] = String(repeating: "ab", count: 32) }
            let run = try await BinaryProcess.run(arguments, environment: env)
            #expect(run.status == 78 && run.stderr.contains("SIWA_TEAM_ID") && run.stderr.contains("'abc' is not a team ID"),
                    "\(arguments): \(run.status) \(run.stderr)")
        }
        // A malformed SIWA_CLIENT_ID is configuration too, in every command that takes a client,
        // quoted escaped (accounts import and transfer import-csv had stored it).
        for arguments in [["enqueue", "refresh-validation"], ["accounts", "import", "/dev/null"],
                          ["transfer", "import-csv", "/dev/null", "--transfer-date", "2026-12-01"],
                          ["sign-in", "--identity-token-file", tokenFile, "--code", "c1", "--timeout-seconds", "1"]] {
            var env = environment
            env["SIWA_TEAM_ID"] = "TEAM000001"
            env["SIWA_CLIENT_ID"] = "com.x\u{1B}[31m"
            env["SIWA_TOKEN_KEY"] = String(repeating: "ab", count: 32)
            let run = try await BinaryProcess.run(arguments, environment: env)
            #expect(run.status == 78 && run.stderr.contains("SIWA_CLIENT_ID / --client-id 'com.x\\u{1B}[31m' is not a client ID"),
                    "\(arguments): \(run.status) \(run.stderr)")
        }
        environment["SIWA_APPLE_BASE_URL"] = "ftp://x"
        let seed = try await BinaryProcess.run(["seed", "--accounts", "1"], environment: environment.merging(["SIWA_TEAM_ID": "TEAM000001"]) { $1 })
        #expect(seed.status == 78 && seed.stderr.contains("SIWA_APPLE_BASE_URL 'ftp://x' is not an http(s) URL"), "\(seed.stderr)")
        #expect(try await db.scalar("SELECT count(*)::int FROM siwa.sign_ins", as: Int.self) == 0)
        #expect(try await db.scalar("SELECT count(*)::int FROM siwa.jobs", as: Int.self) == 0)
        #expect(try await db.scalar("SELECT count(*)::int FROM siwa.transfer_imports", as: Int.self) == 0)
        await db.drop()
    }

    /// `sign-in` takes the authorization code from `--code-file` (kept out of the process list) or
    /// `--code`, exactly one; an empty or unreadable file is refused naming the flag, and a file
    /// name is quoted with its control characters escaped. Nothing is submitted.
    @Test func signInTakesTheCodeFromOneOfCodeFileOrCode() async throws {
        let db = try await TestDatabase.create()
        var environment = db.environment
        environment["SIWA_TEAM_ID"] = "TEAM000001"
        environment["SIWA_CLIENT_ID"] = "com.example.x"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sign-in-code-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let token = directory.appendingPathComponent("token.jwt").path, code = directory.appendingPathComponent("code.txt").path
        let blank = directory.appendingPathComponent("blank.txt").path
        try Data("e30.e30.c2ln".utf8).write(to: URL(fileURLWithPath: token))
        try Data("c1\n".utf8).write(to: URL(fileURLWithPath: code))
        try Data(" \n".utf8).write(to: URL(fileURLWithPath: blank))
        // What a token or a code cannot hold: a second line, a NUL (the database refuses it), more
        // than the 16 KiB submit_sign_in takes. None of it is ever shown.
        let twoLines = directory.appendingPathComponent("two-lines.txt").path, nul = directory.appendingPathComponent("nul.txt").path
        let huge = directory.appendingPathComponent("huge.jwt").path
        try Data("SECRETAA\nSECRETBB\n".utf8).write(to: URL(fileURLWithPath: twoLines))
        try Data("SECRET\u{0}CC".utf8).write(to: URL(fileURLWithPath: nul))
        try Data(String(repeating: "SECRETDD", count: 2_500).utf8).write(to: URL(fileURLWithPath: huge))
        let runs: [([String], Int32, String)] = [
            (["--identity-token-file", token, "--code-file", twoLines], 65,
             "--code-file '\(twoLines)': byte 9 (after any surrounding white space) is not printable ASCII"),
            (["--identity-token-file", nul, "--code", "c1"], 65, "--identity-token-file '\(nul)': byte 7 (after any surrounding white space) is not printable ASCII"),
            (["--identity-token-file", token, "--code", "X\nSECRETEE"], 65, "--code: byte 2 (after any surrounding white space) is not printable ASCII"),
            (["--identity-token-file", huge, "--code", "c1"], 66,
             "--identity-token-file '\(huge)' cannot be read: larger than 17408 bytes"),
            (["--identity-token-file", token, "--code", "c1", "--client-id", "com.x\u{1B}[31m"], 64,
             "--client-id: expected a client ID (App ID or Services ID: printable ASCII without spaces, e.g. com.example.app), "
                + "got 'com.x\\u{1B}[31m'"),
            (["--identity-token-file", token], 64, "sign-in: --code-file (or --code) is required"),
            (["--identity-token-file", token, "--code", "c1", "--code-file", code], 64, "give --code or --code-file, not both"),
            (["--identity-token-file", "-", "--code-file", "-"], 64, "cannot both read stdin"),
            (["--identity-token-file", "/dev/stdin", "--code-file", "-"], 64, "cannot both read stdin"),
            (["--identity-token-file", token, "--code-file", blank], 65,
             "--code-file '\(blank)': empty; it should hold the authorization code"),
            (["--identity-token-file", token, "--code-file", code + ".missing"], 66,
             "--code-file '\(code).missing' cannot be read: no such file or directory"),
            (["--identity-token-file", directory.path + "/bad\nname", "--code", "c1"], 66, "bad\\nname' cannot be read"),
        ]
        for (arguments, status, message) in runs {
            let run = try await BinaryProcess.run(["sign-in"] + arguments, environment: environment)
            #expect(run.status == status && run.stderr.contains(message), "\(arguments): \(run.status) \(run.stderr)")
            #expect(!run.stderr.contains("bad\nname") && !run.stderr.contains("SECRET") && !run.stdout.contains("SECRET"),
                    "a file name's newline is escaped, a secret never shown: \(run.stderr)")
        }
        #expect(try await db.scalar("SELECT count(*)::int FROM siwa.sign_ins", as: Int.self) == 0)
        await db.drop()
    }

    /// A token file that cannot be read is unreadable input (66) naming the flag, as every other
    /// input file is (it used to be a usage error, 64); a file that never ends (/dev/zero) is
    /// refused at a limit instead of read until memory runs out; every --client-id is checked by
    /// the parser; paths are quoted escaped.
    @Test func inputsAreBoundedAndNamed() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bounded-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let token = directory.appendingPathComponent("token.txt").path
        try Data("e30.e30.c2ln".utf8).write(to: URL(fileURLWithPath: token))
        let odd = directory.appendingPathComponent("k\ney").path
        try FileManager.default.createDirectory(atPath: odd, withIntermediateDirectories: true)
        let shape = "--client-id: expected a client ID (App ID or Services ID: printable ASCII without spaces, e.g. com.example.app)"
        let runs: [([String], Int32, String)] = [
            (["token", "verify", "--jwks", "/dev/null", "--client-id", "com.example.app", "--token-file", "/nonexistent/token\u{1B}[2J.jwt"],
             66, "--token-file '/nonexistent/token\\u{1B}[2J.jwt' cannot be read: no such file"),
            (["token", "verify", "--jwks", "/dev/null", "--client-id", "com.example.app", "--token-file", "/dev/zero"],
             66, "--token-file '/dev/zero' cannot be read: larger than 262144 bytes"),
            (["token", "verify", "--jwks", "/dev/zero", "--client-id", "com.example.app", "--token-file", token],
             65, "JWKS file: '/dev/zero' is larger than 262144 bytes, the limit"),
            (["token", "verify", "--jwks", "/dev/null", "--client-id", "a b", "--token-file", token], 64, shape + ", got 'a b'"),
            (["notifications", "send", "--to", "http://127.0.0.1:1/n", "--sandbox", "http://127.0.0.1:1", "--client-id", "com.example.app",
              "--subs-file", "/dev/zero"], 66, "--subs-file '/dev/zero' cannot be read: larger than 67108864 bytes"),
            (["notifications", "send", "--to", "http://127.0.0.1:1/n", "--sandbox", "http://127.0.0.1:1", "--client-id", "com.x\u{202E}y",
              "--sub", "s"], 64, shape + ", got 'com.x\\u{202E}y'"),
            (["keygen", "--out", odd], 64, "keygen: '\(directory.path)/k\\ney' is a directory"),
        ]
        for (arguments, status, message) in runs {
            let run = try await BinaryProcess.run(arguments, environment: [:])
            #expect(run.status == status && run.stderr.contains(message), "\(arguments): \(run.status) \(run.stderr)")
        }
        // Whatever an error quotes (here a setting's value), no escape sequence, carriage return or
        // right-to-left override reaches the terminal.
        let setting = try await BinaryProcess.run(["enqueue", "noop", "--items", "1"],
                                                  environment: ["SIWA_LOG_LEVEL": "loud\u{1B}[2J\u{7}\u{202E}x"])
        #expect(setting.status == 78 && setting.stderr.contains("SIWA_LOG_LEVEL 'loud\\u{1B}[2J\\u{07}\\u{202E}x'")
                && !setting.stderr.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x7 || $0.value == 0x202E },
                "\(setting.status) \(setting.stderr)")
    }

    @Test func resultsGoToStandardOutputForDashAndAnUnansweredSandboxIsUnavailable() async throws {
        let db = try await TestDatabase.create()
        var environment = db.environment
        #expect(try await BinaryProcess.run(["enqueue", "noop", "--items", "3"], environment: environment).status == 0)
        #expect(try await BinaryProcess.run(["work", "--drain"], environment: environment).status == 0)
        let job = try await db.scalar("SELECT max(id)::int FROM siwa.jobs", as: Int.self)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flag-values-\(job)-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let words = [BinaryProcess.binaryPath, "results", "export", "--job", "\(job)", "--format", "csv", "--out", "-"]
        let exported = try await ShellScript.run("cd '\(directory.path)' && exec " + words.map { "'\($0)'" }.joined(separator: " "),
                                                 environment: environment)
        #expect(exported.status == 0 && exported.stdout.split(separator: "\n").count == 4, "\(exported.stdout) \(exported.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("-").path), "no file named -")
        // Nothing listens on port 1 of the loopback: the job's line is printed, then 69.
        environment["SIWA_TEAM_ID"] = "TEAM000001"
        environment["SIWA_CLIENT_ID"] = "com.example.x"
        // The truth is about tokens: a noop job is not compared; a (hand-made, empty) refresh
        // validation is, and the sandbox that does not answer gives 69.
        let noop = try await BinaryProcess.run(["status", "--job", "\(job)", "--sandbox", "http://127.0.0.1:1"], environment: environment)
        #expect(noop.status == 1 && noop.stderr.contains("job \(job) is a noop job"), "\(noop.status) \(noop.stderr)")
        let validation = try await db.scalar("""
            INSERT INTO siwa.jobs (kind, spec, item_count)
            VALUES ('refresh-validation', '{"team_id": "TEAM000001", "client_id": "com.example.x"}', 0) RETURNING id::int
            """, as: Int.self)
        let status = try await BinaryProcess.run(["status", "--job", "\(validation)", "--sandbox", "http://127.0.0.1:1"],
                                                 environment: environment)
        #expect(status.status == 69 && status.stdout.contains("job \(validation) refresh-validation")
                && status.stderr.contains("sandbox at http://127.0.0.1:1 unreachable"), "\(status.status) \(status.stderr)")
        // Without --job the truth is compared with the latest refresh validation among the jobs
        // shown (the hand-made one above), never with the later noop job.
        let latest = try await BinaryProcess.run(["status", "--sandbox", "http://127.0.0.1:1"], environment: environment)
        #expect(latest.status == 69, "\(latest.status) \(latest.stderr)")
        // The truth is per team and client: another client's validation is never compared with it,
        // and without one of this client nothing is asked of the sandbox.
        let other = try await db.scalar("""
            INSERT INTO siwa.jobs (kind, spec, item_count)
            VALUES ('refresh-validation', '{"team_id": "TEAM000001", "client_id": "com.example.other"}', 0) RETURNING id::int
            """, as: Int.self)
        let otherClient = try await BinaryProcess.run(["status", "--job", "\(other)", "--sandbox", "http://127.0.0.1:1"],
                                                      environment: environment)
        #expect(otherClient.status == 1 && otherClient.stderr.contains(
            "job \(other) validates team TEAM000001 client 'com.example.other', not team TEAM000001 client 'com.example.x'"),
                "\(otherClient.status) \(otherClient.stderr)")
        let none = try await BinaryProcess.run(["status", "--sandbox", "http://127.0.0.1:1"],
                                               environment: environment.merging(["SIWA_CLIENT_ID": "com.example.y"]) { $1 })
        #expect(none.status == 1 && none.stderr.contains("no refresh-validation job of team TEAM000001 client 'com.example.y'"),
                "\(none.status) \(none.stderr)")
        // What a row holds is shown with its control characters escaped (a reason written by hand).
        let paused = try await db.scalar("""
            INSERT INTO siwa.jobs (kind, spec, item_count, state, paused_reason)
            VALUES ('noop', '{}', 0, 'paused', E'bad\\nline\\u001b[31m') RETURNING id::int
            """, as: Int.self)
        let shown = try await BinaryProcess.run(["status", "--job", "\(paused)"], environment: environment)
        #expect(shown.status == 0 && shown.stdout.contains("  paused: bad\\nline\\u{1B}[31m"), "\(shown.stdout)")
        let detail = try await BinaryProcess.run(["job", "show", "\(paused)"], environment: environment)
        #expect(detail.status == 0 && detail.stdout.contains("  paused: bad\\nline\\u{1B}[31m"), "\(detail.status) \(detail.stdout)")
        // A job id that does not exist is said as such; an outcome no result has is pointed out.
        let missing = try await BinaryProcess.run(["results", "export", "--job", "999999", "--format", "csv"], environment: environment)
        #expect(missing.status == 1 && missing.stderr.contains("job 999999 not found") && missing.stdout.isEmpty, "\(missing.stderr)")
        let typo = try await BinaryProcess.run(["results", "export", "--job", "\(job)", "--format", "csv", "--outcome", "sucess"],
                                               environment: environment)
        #expect(typo.status == 0 && typo.stdout.split(separator: "\n").count == 1
                && typo.stderr.contains("job \(job) has no result with outcome 'sucess'; its results' outcomes: "), "\(typo.stderr)")
        await db.drop()
    }
}
