import Commands
import SIWACore
import SIWAJobs

/// `siwa-jobs doctor`: prints one line per check (`Doctor`): `ok`, `FAIL` or `skip`, the check
/// and what was found.
enum DoctorCommand: Command {
    static let spec = CommandSpec(
        "doctor", abstract: "check the configuration without calling Apple",
        discussion: "Checks SIWA_TEAMS_FILE when set, the team, key and client IDs, the .p8 key (and that it mints a "
            + "client secret that verifies), the token encryption key (and that a stored token opens with it), the "
            + "Apple base URL, logging, the database (and that it accepts writes), clock skew against it and migrations "
            + "(pending, changed, or newer than this binary); it warns (warn, exit unchanged) about live workers running "
            + "another version. Exit 0 when all pass, 78 when any configuration check "
            + "fails (database settings included), 75 when only the database is unreachable or read-only.",
        environment: EnvironmentDocs.worker)

    static var checksLogging: Bool { false }   // doctor reports it as one of its checks

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let report = try await Doctor(configuration: context.configuration, clock: context.clock, version: Version.current).run()
        for check in report.checks {
            let status = switch check.status {
            case .ok: "ok    "
            case .fail: "FAIL  "
            case .skip: "skip  "
            case .warn: "warn  "
            }
            // One line each, whatever a detail quotes (a path, a setting, a worker's row).
            say(status + check.name + ": " + PrintableText.escaped(check.detail))
        }
        return .of(report)
    }
}
