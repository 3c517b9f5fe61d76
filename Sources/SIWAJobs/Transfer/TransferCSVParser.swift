/// An incremental parser for the transfer hand-off file (RFC 4180 CSV, UTF-8):
///
/// ```
/// external_user_id,transfer_sub
/// user-000001,760417.ebbf12acbc78e1be1668ba852d492d8a.1827
/// ```
///
/// - The header is required (line 1, names compared case-insensitively).
/// - A UTF-8 byte-order mark at the start is skipped (and noted); UTF-16 files are refused, with
///   or without a byte-order mark (NUL bytes among the first four).
/// - CRLF and LF line endings are both accepted (CRLF is noted with its first line); a bare CR is an error.
/// - Error messages never echo raw bytes: a header preview escapes control and invalid bytes.
/// - Fields may be quoted (`"a,b"`, `""` for a quote); a quoted field may span lines.
/// - Blank lines are skipped.
/// - Each data row must have exactly 2 fields: a non-empty `external_user_id` (at most 512 bytes,
///   no control characters) and a non-empty `transfer_sub` (at most 256 printable ASCII
///   characters, no spaces).
///
/// Bytes are fed in chunks of any size; rows and errors come out with the 1-based line number
/// where the row starts. Duplicates are not checked here (the loader checks them in SQL). The
/// tokenizing (quotes, line endings, byte-order mark, UTF-16) is `CSVRecordParser`'s.
struct TransferCSVParser {
    enum Event: Equatable {
        case row(line: Int, externalUserID: String, transferSub: String)
        case error(line: Int, message: String)
    }

    static let header = ["external_user_id", "transfer_sub"]
    static let maxUserIDBytes = 512
    static let maxTransferSubBytes = 256

    private var records = CSVRecordParser()
    private var headerSeen = false
    var sawByteOrderMark: Bool { records.sawByteOrderMark }
    /// The first line that ended in CRLF, if any.
    var firstCRLFLine: Int? { records.firstCRLFLine }
    /// Set when the file cannot be parsed at all (UTF-16); no further events are produced.
    var fatal: String? { records.fatal }

    /// Parses `bytes`, calling `emit` for each complete row or error.
    mutating func feed(_ bytes: [UInt8], _ emit: (Event) -> Void) {
        var events: [CSVRecordParser.Event] = []
        records.feed(bytes) { events.append($0) }
        for event in events { handle(event, emit) }
    }

    /// Ends the input: closes the last row (a missing final newline is fine).
    mutating func finish(_ emit: (Event) -> Void) {
        var events: [CSVRecordParser.Event] = []
        records.finish { events.append($0) }
        for event in events { handle(event, emit) }
        if !headerSeen {
            emit(.error(line: 1, message: "the file is empty: expected the header 'external_user_id,transfer_sub'"))
            headerSeen = true
        }
    }

    /// The first record is the header; any event before it (an error) counts as the header.
    private mutating func handle(_ event: CSVRecordParser.Event, _ emit: (Event) -> Void) {
        switch event {
        case let .error(line, message):
            headerSeen = true
            emit(.error(line: line, message: message))
        case let .record(line, row) where !headerSeen:
            headerSeen = true
            let names = row.map { String(decoding: $0, as: UTF8.self).trimmingSpaces().lowercased() }
            if names != Self.header {
                emit(.error(line: line, message: "expected the header 'external_user_id,transfer_sub', found '"
                    + Self.preview(row) + "'"))
            }
        case let .record(line, row):
            emit(Self.validate(row, line: line))
        }
    }

    static func validate(_ row: [[UInt8]], line: Int) -> Event {
        guard row.count == 2 else {
            return .error(line: line, message: "expected 2 columns (external_user_id,transfer_sub), found \(row.count)")
        }
        guard let user = String(validating: row[0], as: UTF8.self), let sub = String(validating: row[1], as: UTF8.self) else {
            return .error(line: line, message: "not valid UTF-8")
        }
        if user.isEmpty { return .error(line: line, message: "external_user_id is empty") }
        if sub.isEmpty { return .error(line: line, message: "transfer_sub is empty") }
        if row[0].count > maxUserIDBytes { return .error(line: line, message: "external_user_id is longer than \(maxUserIDBytes) bytes") }
        if row[0].contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            return .error(line: line, message: "external_user_id contains a control character")
        }
        if row[1].count > maxTransferSubBytes {
            return .error(line: line, message: "transfer_sub is longer than \(maxTransferSubBytes) characters")
        }
        if !row[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            return .error(line: line, message: "transfer_sub contains a space, control or non-ASCII character")
        }
        return .row(line: line, externalUserID: user, transferSub: sub)
    }

    /// The row for an error message (`CSVRecordParser.preview`).
    static func preview(_ row: [[UInt8]]) -> String { CSVRecordParser.preview(row) }

    /// `bytes` as printable text (`CSVRecordParser.escaped`).
    static func escaped(_ bytes: [UInt8], limit: Int) -> String { CSVRecordParser.escaped(bytes, limit: limit) }
}
