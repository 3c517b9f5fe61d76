import Foundation
import SIWACore

/// What `accounts import` did. With `applied` false nothing was written (the file was refused).
public struct AccountImportReport: Sendable, Encodable {
    /// Data rows read (good and bad).
    public var rows = 0
    public var inserted = 0
    public var updated = 0
    /// Rows of existing accounts that already held exactly these values (and this token).
    public var unchanged = 0
    /// Rows refused: with `--rejects` written to that file, else the reason nothing was loaded.
    public var rejected = 0
    /// Refresh tokens sealed under the current key (new or changed tokens only).
    public var tokensSealed = 0
    public var bytes: Int64 = 0
    public var format = "csv"
    public var applied = false
    /// Line-numbered errors, the first `ImportErrors.maxMessages`; never a token.
    public var errors: [String] = []
    public var notes: [String] = []

    /// Accounts inserted or updated.
    public var changed: Int { inserted + updated }

    enum CodingKeys: String, CodingKey {
        case rows, inserted, updated, unchanged, rejected, changed, bytes, format, applied, errors, notes
        case tokensSealed = "tokens_sealed"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(rows, forKey: .rows)
        try c.encode(inserted, forKey: .inserted)
        try c.encode(updated, forKey: .updated)
        try c.encode(unchanged, forKey: .unchanged)
        try c.encode(rejected, forKey: .rejected)
        try c.encode(changed, forKey: .changed)
        try c.encode(tokensSealed, forKey: .tokensSealed)
        try c.encode(bytes, forKey: .bytes)
        try c.encode(format, forKey: .format)
        try c.encode(applied, forKey: .applied)
        try c.encode(errors, forKey: .errors)
        try c.encode(notes, forKey: .notes)
    }
}

/// Refused rows as they are found: counted, the first `maxMessages` kept for the report, and
/// (with `--rejects`) every one written to the rejects file.
struct ImportErrors {
    static let maxMessages = 100
    private(set) var count = 0
    private(set) var messages: [String] = []
    let rejects: RejectsFile?

    mutating func add(_ error: ImportRowError) throws {
        count += 1
        if messages.count < Self.maxMessages { messages.append(error.message) }
        try rejects?.write(error)
    }
}

/// `--rejects FILE`: the refused rows with their reasons, CSV `line,field,reason,external_user_id,sub`.
/// Never a token: a bad row's `refresh_token` is not copied (re-import those lines from the
/// original file once fixed). Created new (`O_EXCL`, mode 0600), so it never overwrites the input.
final class RejectsFile {
    let path: String
    private let handle: FileHandle
    private var buffer: [UInt8] = []

    /// - Throws: `AccountImportError` when the file exists or cannot be created.
    init(path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw AccountImportError("--rejects \(PrintableText.quotedPath(path)) cannot be created: \(String(cString: strerror(errno)).lowercased())"
                + (errno == EEXIST ? " (it exists; name a new file)" : ""))
        }
        self.path = path
        handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        buffer = Array("line,field,reason,external_user_id,sub\n".utf8)
    }

    func write(_ error: ImportRowError) throws {
        let fields = [String(error.line), error.field ?? "", error.reason, error.externalUserID ?? "", error.sub ?? ""]
        buffer += Array((fields.map(TransferCSVExporter.field).joined(separator: ",") + "\n").utf8)
        if buffer.count >= 1 << 16 { try flush() }
    }

    func flush() throws {
        try handle.write(contentsOf: Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }

    func close() throws {
        try flush()
        try handle.close()
    }
}

/// An import that cannot start: a malformed team ID, no token key, a rejects file that exists.
public struct AccountImportError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}
