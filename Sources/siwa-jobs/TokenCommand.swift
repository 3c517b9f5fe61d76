import AppleID
import Foundation
import SIWAJobs

/// `siwa-jobs token verify TOKEN|--token-file F --jwks FILE|URL --client-id C [--client-id C2]
/// [--at ISO8601] [--nonce N]`: verifies an identity token or a notification JWT (ops debugging;
/// `TokenVerifyCommandCore`). Prints the normalised claims as JSON and exits 0, or prints
/// `rejected: <reason>: <detail>` and exits 1. `--token-file -` reads stdin; prefer it to a
/// positional token, which other users may see in the process list.
enum TokenCommand {
    static func run(_ words: [String]) async throws -> Int32 {
        guard words.first == "verify" else { throw UsageError(message: "token: expected 'verify'") }
        var rest = Array(words.dropFirst())
        // --client-id may repeat; Arguments keeps one value per flag, so collect them first.
        var clientIDs: [String] = []
        var i = 0
        while i < rest.count {
            if rest[i] == "--client-id" {
                guard i + 1 < rest.count, !rest[i + 1].hasPrefix("--") else {
                    throw UsageError(message: "--client-id needs a value, e.g. --client-id com.example.app")
                }
                clientIDs.append(rest[i + 1])
                rest.removeSubrange(i...(i + 1))
            } else if rest[i].hasPrefix("--client-id=") {
                clientIDs.append(String(rest[i].dropFirst("--client-id=".count)))
                rest.remove(at: i)
            } else {
                i += 1
            }
        }
        let args = try Arguments(rest, valueFlags: ["token-file", "jwks", "at", "nonce"])
        guard !clientIDs.isEmpty else { throw UsageError(message: "token verify: --client-id C is required (repeat it for more)") }
        guard !clientIDs.contains(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) else {
            throw UsageError(message: "--client-id: empty value; give a client id such as com.example.app")
        }
        guard let jwks = args.string("jwks") else { throw UsageError(message: "token verify: --jwks FILE|URL is required") }
        let token = try readToken(args)
        var at: Date?
        if let text = args.string("at") {
            let plain = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: false))
            guard let date = plain ?? (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) else {
                throw UsageError(message: "--at: expected an ISO 8601 time such as 2024-01-31T12:00:00Z, got '\(text)'")
            }
            at = date
        }
        let provider: any JWKSProvider = jwks.hasPrefix("http://") || jwks.hasPrefix("https://")
            ? JWKSProviders.url(jwks, transport: CurlTransport(maxConnectionsPerHost: 1))
            : FileJWKSProvider(path: jwks)
        let outcome = await TokenVerifyCommandCore.run(token: token, jwks: provider, clientIDs: clientIDs,
                                                       at: at, expectedNonce: args.string("nonce"))
        if outcome.exitCode == 64 { throw UsageError(message: outcome.output) }
        if [65, 66, 69, 70].contains(outcome.exitCode) {
            SIWAJobsCommand.fail(outcome.output)
        } else {
            say(outcome.output)
        }
        return outcome.exitCode
    }

    private static func readToken(_ args: Arguments) throws -> String {
        if let file = args.string("token-file") {
            guard args.positionals.isEmpty else { throw UsageError(message: "token verify: give TOKEN or --token-file, not both") }
            let data = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: file)
            guard let data else { throw UsageError(message: "--token-file: cannot read '\(file)'") }
            return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard args.positionals.count == 1, let token = args.positionals.first else {
            throw UsageError(message: "token verify: expected one TOKEN (or --token-file F)")
        }
        return token
    }
}
