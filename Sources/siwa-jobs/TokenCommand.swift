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
                                        + "https://appleid.apple.com/auth/keys (http only to a loopback host)", required: true)
    static let clientIDs = Declare.repeated("client-id", "C", .appleClientID, help: "an accepted audience (aud); repeat it for more",
                                            required: true)
    static let at = Declare.option("at", "TIME", .custom("an ISO 8601 time such as 2024-01-31T12:00:00Z or epoch seconds such as "
                                                       + "1706702400", parseTime),
                                   help: "verify as of this time (ISO 8601, or seconds since 1970) instead of now", defaultText: "now")
    static let nonce = Declare.option("nonce", "RAW", .string, help: "require this nonce (raw, or its SHA-256 hex in the token)")

    static let spec = CommandSpec(
        "verify", abstract: "verify an id_token or notification JWT against a JWKS",
        discussion: "When nothing could be verified: 64 usage (also a plain http --jwks URL to a host that is not loopback), "
            + "65 the --jwks file is not a usable JWKS, 66 it cannot be read, 69 the --jwks URL could not be fetched or "
            + "served no usable JWKS.",
        arguments: [token], options: [tokenFile, jwks, clientIDs, at, nonce], environment: [EnvironmentDocs.caFile])

    static var usesDatabase: Bool { false }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let source = try arguments.required(jwks)
        let location: JWKSLocation
        do { location = try JWKSLocation.parse(source) } catch { throw arguments.usageError(error.description) }
        let text = try readToken(arguments)
        let provider: any JWKSProvider
        switch location {
        case .url(let url): provider = JWKSProviders.url(url, transport: try context.configuration.httpTransport(maxConnectionsPerHost: 1))  // this process's one transport
        case .file(let path): provider = FileJWKSProvider(path: path)
        }
        let outcome = try await TokenVerification.run(token: text, jwks: provider, clientIDs: arguments[clientIDs],
                                                      at: arguments[at], expectedNonce: arguments[nonce], clock: context.clock)
        say(outcome.text)
        return .of(outcome)
    }

    /// `--at`: ISO 8601 (with or without fractional seconds), or whole seconds since 1970 (at most
    /// 10^11: a larger number is milliseconds, refused).
    static func parseTime(_ text: String) -> Date? {
        if !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            guard text.count <= 12, let seconds = Int64(text), seconds <= 100_000_000_000 else { return nil }
            return Date(timeIntervalSince1970: Double(seconds))
        }
        return (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: false)))
            ?? (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
    }

    private static func readToken(_ arguments: ParsedArguments) throws -> String {
        if let file = arguments[tokenFile] {
            guard arguments[token] == nil else { throw arguments.usageError("token verify: give TOKEN or --token-file, not both") }
            let data: [UInt8]
            // At most 256 KiB (a JWT is a few): /dev/zero or a wrong file is refused, not read until memory runs out.
            do { data = try InputFile.read(file, limit: 256 * 1024, stdin: true) } catch { throw error.named(by: "--token-file") }   // 66
            return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let token = arguments[token] else { throw arguments.usageError("token verify: expected one TOKEN (or --token-file F)") }
        return token
    }
}
