import Clocks
import Commands
import Foundation
import Postgres
import SIWACore
import SIWAJobs

/// `siwa-jobs sign-in`: submits one sign-in through PostgreSQL (`siwa.submit_sign_in`), as an app
/// backend would, waits for a worker's outcome and prints it (README "Sign-in: accounts in
/// through the exchange"). For trying the exchange by hand; apps call the function themselves.
enum SignInCommand: Command {
    static let tokenFile = Declare.option("identity-token-file", "F", .string,
                                          help: "the identity token (compact JWT) in a file; - reads stdin", required: true)
    static let code = Declare.option("code", "C", .string, help: "the authorization code (single use, valid 5 minutes; "
                                        + "visible in the process list while this runs: prefer --code-file)")
    static let codeFile = Declare.option("code-file", "F", .string,
                                         help: "or the authorization code in a file; - reads stdin (never in the process list)")
    static let nonce = Declare.option("nonce", "N", .string, help: "the raw nonce of the authorization request")
    static let nonceSHA256 = Declare.option("nonce-sha256", "HEX",
                                              .custom("64 hex digits (the SHA-256 of the raw nonce)") { text in
                                                  text.utf8.count == 64 && text.allSatisfy(\.isHexDigit) ? text : nil
                                              }, help: "or the nonce's SHA-256 hex (not both)")
    static let redirectURI = Declare.option("redirect-uri", "U", .string, help: "the redirect URI of a web authorization")
    static let externalUserID = Declare.option("external-user-id", "ID", .string,
                                               help: "the app's own user id for a new account", defaultText: "the Apple sub")
    static let name = Declare.option("name", "TEXT", .string, help: "the user's name from the first authorization")
    static let email = Declare.option("email", "ADDR", .string, help: "the email from the first authorization")
    static let timeout = Declare.value("timeout-seconds", "S", .seconds(in: 1...600), default: .seconds(30),
                                       help: "how long to wait for a worker's outcome")

    static let spec = CommandSpec(
        "sign-in", abstract: "submit one sign-in (identity token + authorization code), wait, print the outcome",
        discussion: "Needs a running `siwa-jobs work`. Exit 0 linked or created; 1 identity_token_rejected, code_rejected "
            + "or conflict; 78 configuration_error; 75 no outcome within --timeout-seconds (the sign-in stays queued).",
        options: [tokenFile, code, codeFile, nonce, nonceSHA256, redirectURI, externalUserID, name, email, timeout,
                  CommonOptions.teamID, CommonOptions.clientID],
        environment: [EnvironmentDocs.database] + EnvironmentDocs.logging)

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let (team, client) = try context.configuration.jobTarget(teamID: arguments[CommonOptions.teamID],
                                                                 clientID: arguments[CommonOptions.clientID])
        if arguments[nonce] != nil && arguments[nonceSHA256] != nil {
            throw arguments.usageError("sign-in: give --nonce or --nonce-sha256, not both")
        }
        let path = try arguments.required(tokenFile)
        // Usage first, then the files: nothing is read when the flags are wrong.
        switch (arguments[code], arguments[codeFile]) {
        case (nil, nil): throw arguments.usageError("sign-in: --code-file (or --code) is required")
        case (_?, _?): throw arguments.usageError("sign-in: give --code or --code-file, not both")
        case (nil, let file?) where readsStdin(file) && readsStdin(path):
            throw arguments.usageError("sign-in: --identity-token-file and --code-file cannot both read stdin (-)")
        default: break
        }
        let identityToken = try readSecret(path, flag: "identity-token-file", what: "the identity token, a compact JWT",
                                           limit: identityTokenLimit)
        let authorizationCode: String
        if let given = arguments[code] {
            try checkSecret(given, source: "--code", what: "an authorization code", limit: codeLimit)
            authorizationCode = given
        } else {
            authorizationCode = try readSecret(try arguments.required(codeFile), flag: "code-file", what: "the authorization code",
                                               limit: codeLimit)
        }
        var request = SignInRequest(teamID: team, clientID: client, identityToken: identityToken,
                                    code: authorizationCode, nonce: arguments[nonce], nonceSHA256: arguments[nonceSHA256],
                                    redirectURI: arguments[redirectURI])
        request.externalUserID = arguments[externalUserID]
        request.name = arguments[name]
        request.email = arguments[email]
        let pool = PostgresPool(configuration: context.configuration.postgres, size: 1)
        let submitter = SignInSubmitter(pool: pool)
        let outcome = await Result(catching: { () async throws -> (Int64, SignInResult?) in
            let id = try await submitter.submit(request)
            return (id, try await submitter.wait(id: id, timeout: arguments[timeout], clock: context.clock))
        })
        await pool.close()
        let (id, result) = try outcome.get()
        guard let result else {
            say("sign-in \(id): no outcome within \(Int(arguments[timeout].seconds)) s; is a `siwa-jobs work` with credentials "
                + "for team \(team) client \(client) running? "
                + "(it stays queued: \(SignInSubmitter.outcomeQuery(id: id)))")
            return .of(signInOutcome: nil)
        }
        say("sign-in \(id): \(result.line)")
        return .of(signInOutcome: result.outcome)
    }

    /// `-`, or a path naming the file standard input is (`/dev/stdin`, `/dev/fd/0`, a link to it,
    /// or the very file redirected in), compared by device and inode.
    static func readsStdin(_ path: String) -> Bool {
        if path == "-" { return true }
        var named = stat(), input = stat()
        guard stat(path, &named) == 0, fstat(STDIN_FILENO, &input) == 0 else { return false }
        return named.st_dev == input.st_dev && named.st_ino == input.st_ino
    }

    /// The longest identity token `siwa.submit_sign_in` takes (16 KiB), and the longest code read.
    static let identityTokenLimit = 16 * 1024, codeLimit = 4 * 1024

    /// The trimmed text of `path` (`-`: stdin), at most `limit` bytes, checked by `checkSecret`.
    /// - Throws: `InputFileError` (exit 66) naming `--flag` when it cannot be read or is larger than
    ///   `limit` + 1 KiB; `CommandFailure` `.refusedInput` (exit 65) naming `--flag` and the file when it
    ///   holds nothing but white space or a byte a token or code cannot hold. The content is never shown.
    private static func readSecret(_ path: String, flag: String, what: String, limit: Int) throws -> String {
        let data: [UInt8]
        // Room for surrounding white space (a trailing newline, CRLF); the value itself is held to `limit`.
        do { data = try InputFile.read(path, limit: limit + 1024, stdin: true) } catch { throw error.named(by: "--\(flag)") }
        let source = "--\(flag) \(path == "-" ? "(stdin)" : PrintableText.quotedPath(path))"
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        try checkSecret(text, source: source, what: what, limit: limit)
        return text
    }

    /// Identity tokens (compact JWTs) and authorization codes are printable ASCII without spaces:
    /// anything else (a second line, a control character, a byte-order mark, bytes that are not
    /// UTF-8, a NUL the database would refuse) is a mistake in what was given, refused before it is
    /// submitted rather than spent on Apple or stored.
    /// - Throws: `CommandFailure` `.refusedInput` (exit 65) naming `source`; the value is never shown.
    private static func checkSecret(_ text: String, source: String, what: String, limit: Int) throws {
        guard !text.isEmpty else { throw CommandFailure("\(source): empty; it should hold \(what)", kind: .refusedInput) }
        guard text.utf8.count <= limit else {
            throw CommandFailure("\(source): longer than \(limit) bytes; it should hold \(what)", kind: .refusedInput)
        }
        if let offset = text.utf8.firstIndex(where: { $0 < 0x21 || $0 > 0x7E }) {
            let position = text.utf8.distance(from: text.utf8.startIndex, to: offset) + 1
            throw CommandFailure("\(source): byte \(position) (after any surrounding white space) is not printable ASCII (a space, a line break, a control "
                + "character or non-ASCII text); it should hold \(what), nothing else", kind: .refusedInput)
        }
    }
}
