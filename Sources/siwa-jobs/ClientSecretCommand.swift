import AppleID
import Clocks
import Commands
import Foundation
import SIWAJobs

/// `siwa-jobs client-secret`: prints a client secret for debugging with curl. The secret is the
/// only thing on stdout.
enum ClientSecretCommand: Command {
    static let lifetime = Declare.value(
        "lifetime-seconds", "S", .seconds(in: 60...(ClientSecret.maximumLifetime - ClientSecret.issuedAtBackdate).seconds),
        default: .seconds(3600), help: "how long the secret is valid")

    static let spec = CommandSpec(
        "client-secret", abstract: "mint and print a client secret (ES256, raw R||S) for trying Apple by hand",
        discussion: "Only the secret goes to stdout; its team, kid and expiry go to stderr.",
        options: [CommonOptions.teamID, CommonOptions.keyID, CommonOptions.keyFile, CommonOptions.clientID, lifetime],
        environment: EnvironmentDocs.singleTeam + EnvironmentDocs.logging)

    static var usesDatabase: Bool { false }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let credentials = try context.configuration.credentials(flags: CredentialFlags(
            teamID: arguments[CommonOptions.teamID], keyID: arguments[CommonOptions.keyID],
            clientID: arguments[CommonOptions.clientID], keyFile: arguments[CommonOptions.keyFile]))
        let minted = try ClientSecret.mint(credentials: credentials, now: context.clock.now, lifetime: arguments[lifetime])
        say(minted.token)
        try? FileHandle.standardError.write(contentsOf: Data(("client secret for \(credentials.clientID) (team \(credentials.teamID), "
            + "kid \(credentials.keyID)) expires \(minted.expiresAt)\n").utf8))
        return .success
    }
}
