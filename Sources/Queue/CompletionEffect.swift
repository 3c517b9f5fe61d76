import Foundation

/// What a job kind writes, beyond the queue's own columns, in the statement that completes its
/// items: values for its own result columns, and its account effect.
public struct KindWrites: Sendable {
    /// Kind-owned text columns of `siwa.results`, filled from `ResultRecord.kindValues`.
    public var resultColumns: [ResultColumn]
    /// The kind's effect, or nil when its items change nothing beyond the queue's rows.
    public var effect: CompletionEffect?
    /// When true, an item claimed by range (`ClaimedItem.claimedByRange`) that succeeds with a
    /// result keeps its planned row (available, not singly, attempt 0): its result row, marked
    /// `kept`, is the record that it ended, and the completion writes one row fewer per item
    /// (README "Succeeded range items keep their row"). Readers count such items through
    /// `ItemCounts`, `siwa.job_progress` and `siwa.summarize_job`. Only for kinds whose own SQL
    /// never reads a finished item's state from `siwa.job_items`. Default false.
    public var keepsSucceededRangeItems: Bool

    public init(resultColumns: [ResultColumn] = [], effect: CompletionEffect? = nil, keepsSucceededRangeItems: Bool = false) {
        self.resultColumns = resultColumns
        self.effect = effect
        self.keepsSucceededRangeItems = keepsSucceededRangeItems
    }

    /// A kind with no columns and no effect of its own.
    public static var none: KindWrites { KindWrites() }
}

/// A job kind's effect (on accounts, transfer rows, notifications...): statements the queue runs
/// as data-modifying CTEs of the one statement that completes the kind's items, after their state,
/// result and audit rows. A statement is atomic, so an item's effect lands together with its
/// completion or not at all, and only for items whose lease this worker still held.
///
/// The contract for a step's SQL:
/// - it may read the relation `done`, one row per item the statement completed, with columns
///   `item_id bigint`, `job_id bigint`, `account_id bigint` (NULL for payload items),
///   `attempt int`, `state text` (an `ItemState`: `succeeded`, `failed` or `discarded` for
///   finished items, `available` for retries and releases), `outcome text` (the result's outcome,
///   NULL without a result), `effect jsonb` (the item's `EffectPayload` as a JSON object, NULL
///   without one) and `kept bool` (true when the item kept its row: `keepsSucceededRangeItems`);
/// - it may read the steps before it by name;
/// - it is constant text: no bind parameters, never built from input.
/// The steps run in the order given; their names are lower-case, unique, and not one of
/// `reservedNames`.
public struct CompletionEffect: Sendable {
    /// One step: `name AS (body)`.
    public struct Step: Sendable {
        public let name: String
        public let body: String

        /// - Parameters:
        ///   - name: the CTE's name (later steps may read it).
        ///   - body: a data-modifying statement that follows the type's contract.
        public init(_ name: StaticString, unsafeSQL body: String) {
            self.name = "\(name)"
            self.body = body
        }
    }

    public let steps: [Step]

    public init(_ steps: [Step]) {
        self.steps = steps
    }

    /// Names of the completion statement's own CTEs.
    public static let reservedNames: Set<String> = ["input", "leases", "kept_results", "kept", "kept_counts", "updated", "done", "written_results", "written_audit"]
}

/// A kind's per-item input to its `CompletionEffect`: a value of the kind's own `Encodable` type,
/// encoded once, as a JSON object, when the item's operation produces it, and read by the effect
/// as `done.effect`. Absent optionals are absent keys (so `effect ? 'key'` tests presence).
public struct EffectPayload: Sendable, Equatable {
    /// The JSON object text; nil when encoding failed.
    public let json: String?
    /// Why encoding failed; the item is then recorded as failed, without its effect.
    public let encodingFailure: String?

    public init(_ value: some Encodable) {
        do {
            json = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
            encodingFailure = nil
        } catch {
            json = nil
            encodingFailure = "\(error)"
        }
    }
}
