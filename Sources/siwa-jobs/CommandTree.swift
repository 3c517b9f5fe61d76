import Commands

/// Every command, declared: the root's help lists them, the parser resolves words against them,
/// and `command(at:)` finds what runs.
enum CommandTree {
    /// Top-level entries: a runnable command, or a group of subcommands.
    private enum Entry {
        case command(any Command.Type)
        case group(String, abstract: String, [any Command.Type])
    }

    private static var entries: [Entry] { [
        .command(MigrateCommand.self),
        .command(DoctorCommand.self),
        .command(ClientSecretCommand.self),
        .command(KeygenCommand.self),
        .command(SeedCommand.self),
        .group("accounts", abstract: "bulk import and export of accounts (README: Importing accounts)", [
            AccountsImportCommand.self, AccountsExportCommand.self,
        ]),
        .group("tokens", abstract: "stored refresh tokens", [TokensRekeyCommand.self]),
        .group("enqueue", abstract: "plan a job", [
            EnqueueRefreshValidation.self, EnqueueRevocationSweep.self, EnqueueNotifications.self, EnqueueNoop.self,
        ]),
        .group("notifications", abstract: "Apple's server-to-server notifications", [
            NotificationsServeCommand.self, NotificationsSendCommand.self,
        ]),
        .group("token", abstract: "identity tokens and notification JWTs", [TokenVerifyCommand.self]),
        .command(SignInCommand.self),
        .command(WorkCommand.self),
        .command(WorkersCommand.self),
        .command(DashboardCommand.self),
        .command(StatusCommand.self),
        .command(PruneCommand.self),
        .group("jobs", abstract: "jobs of every kind", [JobsListCommand.self]),
        .group("job", abstract: "operator actions on one job", [
            JobShowCommand.self, JobPauseCommand.self, JobResumeCommand.self, JobCancelCommand.self, JobPriorityCommand.self,
            JobRetryCommand.self,
        ]),
        .group("results", abstract: "job results", [ResultsExportCommand.self]),
        .group("transfer", abstract: "app transfer between teams (README: Team transfer runbook)", [
            TransferExportCommand.self, TransferExportCSVCommand.self, TransferImportCSVCommand.self,
            TransferImportCommand.self, TransferStatusCommand.self, TransferLookupCommand.self, TransferReleaseCommand.self,
        ]),
        .command(SandboxCommand.self),
    ] }

    static let root = CommandSpec(
        "siwa-jobs",
        abstract: "Sign in with Apple bulk jobs from a PostgreSQL queue.",
        discussion: "Configuration comes from the environment (secrets never from flags); "
            + "each command's --help lists the variables it reads.",
        environment: EnvironmentDocs.worker,
        subcommands: entries.map { entry in
            switch entry {
            case .command(let command): command.spec
            case .group(let name, let abstract, let commands):
                CommandSpec(name, abstract: abstract, subcommands: commands.map { $0.spec })
            }
        })

    /// The command that runs for `path` (e.g. `["transfer", "export"]`), or nil for a group.
    static func command(at path: [String]) -> (any Command.Type)? {
        for entry in entries {
            switch entry {
            case .command(let command) where path == [command.spec.name]:
                return command
            case .group(let name, _, let commands) where path.count == 2 && path[0] == name:
                if let command = commands.first(where: { $0.spec.name == path[1] }) { return command }
            default:
                continue
            }
        }
        return nil
    }
}
