/// What `siwa-jobs doctor` found: one line per check, in order, and the totals the exit code
/// follows.
public struct DoctorReport: Sendable, Equatable {
    public enum Status: Sendable, Equatable {
        case ok
        case fail
        /// Not checked, because it is not configured (and need not be).
        case skip
        /// Worth a look, but not a problem: the exit status does not change (e.g. live workers
        /// running another version, as during a rolling upgrade).
        case warn
    }

    /// One check: `name` says what was checked (with the variables involved), `detail` what was
    /// found. Never contains a secret.
    public struct Check: Sendable, Equatable {
        public var status: Status
        public var name: String
        public var detail: String
    }

    public private(set) var checks: [Check] = []
    /// Configuration problems found (failed checks other than an unreachable database).
    public private(set) var problems = 0
    /// The database could not be reached or is read-only (a standby, a failover in progress):
    /// something that may pass, so its checks did not run or fail. A database that refuses the
    /// settings is a problem instead.
    public private(set) var databaseUnreachable = false

    public init() {}

    mutating func ok(_ name: String, _ detail: String) {
        checks.append(Check(status: .ok, name: name, detail: detail))
    }

    mutating func fail(_ name: String, _ detail: String) {
        problems += 1
        checks.append(Check(status: .fail, name: name, detail: detail))
    }

    mutating func skip(_ name: String, _ detail: String) {
        checks.append(Check(status: .skip, name: name, detail: detail))
    }

    mutating func warn(_ name: String, _ detail: String) {
        checks.append(Check(status: .warn, name: name, detail: detail))
    }

    /// - Parameter name: the check's name (default `database`).
    mutating func databaseDown(_ detail: String, check name: String = "database") {
        databaseUnreachable = true
        checks.append(Check(status: .fail, name: name, detail: detail))
    }

    /// Runs `body`: an ok line with its result, or a failed line with the error's description.
    mutating func check(_ name: String, _ body: () throws -> String) {
        do { ok(name, try body()) } catch { fail(name, "\(error)") }
    }
}
