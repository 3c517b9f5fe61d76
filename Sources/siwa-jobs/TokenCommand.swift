import AppleID
import Commands
import Foundation
import SIWACore
import SIWAJobs

/// `siwa-jobs token verify`: verifies an identity token or a notification JWT (ops debugging;
/// `TokenVerification`). Prints the normalised claims as JSON (exit 0), or
/// `rejected: <reason>: <detail>` (exit 1).
enum TokenVerifyCommand: Command {
    static let token = Declare.argument("TOKEN", .string, help: "the compact JWT (visible in the process list: prefer --token-file)",
                                        required: false)
    static let tokenFile = Declare.option("token-file", "F", .string, help: "read the token from a file; - reads stdin")
    static let jwks = Declare.option("jwks", "FILE|URL", .string, help: "the JWKS: a file, or a URL such as "
                                        + "https://appleid.apple.com/auth/keys", required: true)
    static let clientIDs = Declare.repeated("client-id", "C", .string, help: "an accepted audience (aud); repeat it for more",
                                            required: true)
    static let at = Declare.option("at", "ISO8601", .custom("an ISO 8601 time such as 2024-01-31T12:00:00Z") { text in
        (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: false)))
            ?? (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
    }, help: "verify as of this time instead of now", defaultText: "now")
    static let nonce = Declare.option("nonce", "RAW", .string, help: "require this nonce (raw, or its SHA-256 hex in the token)")

    static let spec = CommandSpec(
        "verify", abstract: "verify an id_token or notification JWT against a JWKS",
        discussion: "When nothing could be verified: 64 usage, 65 the --jwks file is not a usable JWKS, 66 it cannot be "
            + "read, 69 the --jwks URL could not be fetched or served no usable JWKS.",
        arguments: [token], options: [tokenFile, jwks, clientIDs, at, nonce])

    static var usesDatabase: Bool { false }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let source = try arguments.required(jwks)
        let text = try readToken(arguments)
        // One transport for this process (a URL JWKS only).
        let provider: any JWKSProvider = source.hasPrefix("http://") || source.hasPrefix("https://")
            ? JWKSProviders.url(source, transport: CurlTransport(maxConnectionsPerHost: 1))
            : FileJWKSProvider(path: source)
        let outcome = try await TokenVerification.run(token: text, jwks: provider, clientIDs: arguments[clientIDs],
                                                      at: arguments[at], expectedNonce: arguments[nonce], clock: context.clock)
        say(outcome.text)
        return .of(outcome)
    }

    private static func readToken(_ arguments: ParsedArguments) throws -> String {
        if let file = arguments[tokenFile] {
            guard arguments[token] == nil else { throw arguments.usageError("token verify: give TOKEN or --token-file, not both") }
            let data: [UInt8]
            do { data = try InputFile.read(file, stdin: true) } catch { throw arguments.usageError("--token-file: \(error)") }
            return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let token = arguments[token] else { throw arguments.usageError("token verify: expected one TOKEN (or --token-file F)") }
        return token
    }
}
