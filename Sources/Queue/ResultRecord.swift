/// A job kind's outcome codes: an enum whose raw values are what `siwa.results.outcome` stores,
/// e.g. `enum Outcome: String, OutcomeCode { case valid, invalid, failed, discarded }`.
public protocol OutcomeCode: RawRepresentable<String>, Sendable {}

/// An item's outcome as stored in `siwa.results.outcome`: one of its kind's `OutcomeCode`s, or one
/// of the two the queue writes itself (`discarded`, `failed`).
public struct ResultOutcome: OutcomeCode, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The outcome of a kind's code.
    public init(_ code: some OutcomeCode) {
        rawValue = code.rawValue
    }

    public var description: String { rawValue }
}

extension OutcomeCode where Self == ResultOutcome {
    /// Written by the queue: transient failures until the last attempt, or the lease expired on it.
    public static var discarded: ResultOutcome { ResultOutcome(rawValue: "discarded") }
    /// Written by the queue: the database refused the item's completion, or its effect could not
    /// be encoded.
    public static var failed: ResultOutcome { ResultOutcome(rawValue: "failed") }
}

/// A column of `siwa.results` that a job kind owns (e.g. Apple's error code). The queue writes an
/// item's value into each column its kind declares in `KindWrites.resultColumns`, and names none
/// of them itself. The column must be of type `text`.
public struct ResultColumn: Hashable, Sendable, CustomStringConvertible {
    /// The column name, quoted as an identifier wherever it is written.
    public let name: String

    /// - Parameter name: the column's name; a constant, never input.
    public init(_ name: StaticString) {
        self.name = "\(name)"
    }

    public var description: String { name }
}

/// The row written to `siwa.results` when an item ends. Holds no secrets (tokens only as
/// fingerprints).
public struct ResultRecord: Sendable, Equatable {
    public var outcome: ResultOutcome
    /// The upstream's HTTP status, when the item made a call.
    public var httpStatus: Int?
    /// JSON object text with safe detail.
    public var detail: String
    /// Values for the kind-owned columns its handler declares; values of other columns are not
    /// written.
    public var kindValues: [ResultColumn: String]
    /// The item's `last_error` when it fails permanently (e.g. the upstream's error code); the
    /// outcome's code when nil.
    public var lastError: String?

    public init(outcome: some OutcomeCode, httpStatus: Int? = nil, detail: String = "{}",
                kindValues: [ResultColumn: String] = [:], lastError: String? = nil) {
        self.outcome = ResultOutcome(outcome)
        self.httpStatus = httpStatus
        self.detail = detail
        self.kindValues = kindValues
        self.lastError = lastError
    }
}

/// An `audit_log` row written in the same statement as the item's completion.
public struct AuditRecord: Sendable, Equatable {
    public var action: String
    /// JSON object text with safe detail.
    public var detail: String

    public init(action: String, detail: String = "{}") {
        self.action = action
        self.detail = detail
    }
}
