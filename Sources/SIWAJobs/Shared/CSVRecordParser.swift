import Foundation

/// An incremental RFC 4180 tokenizer for UTF-8 CSV files the operator hands us (the transfer
/// hand-off file, `accounts import`). It knows nothing of columns: callers check the header and
/// the fields.
///
/// - A UTF-8 byte-order mark at the start is skipped (`sawByteOrderMark`); UTF-16 files are
///   refused, with or without a byte-order mark (NUL bytes among the first four): `fatal`.
/// - CRLF and LF line endings are both accepted (`firstCRLFLine`); a bare CR is an error.
/// - Fields may be quoted (`"a,b"`, `""` for a quote); a quoted field may span lines.
/// - Blank lines are skipped.
///
/// Bytes are fed in chunks of any size; records and errors come out with the 1-based line number
/// where the record starts. A record longer than `maxRecordBytes` (its field bytes and commas,
/// without quotes and the line ending) is an
/// error, and the rest of its bytes are skipped rather than kept: memory stays bounded whatever
/// the length of a line (a 200 MB field once took 560 MB before its field check refused it).
struct CSVRecordParser {
    /// The default `maxRecordBytes`: 64 KiB, far above any row of ours (a refresh token is at
    /// most 4,096 characters, the other fields a few hundred bytes).
    static let defaultMaxRecordBytes = 64 * 1024

    enum Event: Equatable {
        case record(line: Int, fields: [[UInt8]])
        case error(line: Int, message: String)
    }

    private enum State { case fieldStart, unquoted, quoted, quoteInQuoted, carriageReturn }

    private var state = State.fieldStart
    private var line = 1
    private var rowLine = 1
    private var field: [UInt8] = []
    private var fields: [[UInt8]] = []
    private var rowError: String?
    /// Bytes of the current record so far (field bytes and separators), up to `maxRecordBytes`.
    private var recordBytes = 0
    /// The most bytes one record may hold.
    var maxRecordBytes = CSVRecordParser.defaultMaxRecordBytes
    private var atFileStart = true
    private var pendingStart: [UInt8] = []
    private(set) var sawByteOrderMark = false
    /// The first line that ended in CRLF, if any.
    private(set) var firstCRLFLine: Int?
    /// Set when the file cannot be parsed at all (UTF-16); no further events are produced.
    private(set) var fatal: String?

    /// Parses `bytes`, calling `emit` for each complete record or error.
    mutating func feed(_ bytes: [UInt8], _ emit: (Event) -> Void) {
        guard fatal == nil else { return }
        if atFileStart {
            pendingStart += bytes
            guard pendingStart.count >= 3 else { return }
            startBody(emit)
            return
        }
        for byte in bytes { step(byte, emit) }
    }

    /// Ends the input: closes the last record (a missing final newline is fine).
    mutating func finish(_ emit: (Event) -> Void) {
        if atFileStart { startBody(emit) }
        guard fatal == nil else { return }
        switch state {
        case .quoted:
            emit(.error(line: rowLine, message: "a quoted field is not closed before the end of the file"))
        case .carriageReturn:
            if rowError == nil { rowError = "a carriage return is not followed by a line feed" }
            endRow(emit)
        case .fieldStart where fields.isEmpty && field.isEmpty:
            break
        default:
            endRow(emit)
        }
    }

    /// The first bytes: a UTF-8 byte-order mark is skipped, a UTF-16 one is fatal.
    private mutating func startBody(_ emit: (Event) -> Void) {
        atFileStart = false
        var body = pendingStart[...]
        pendingStart = []
        if body.starts(with: [0xEF, 0xBB, 0xBF]) {
            sawByteOrderMark = true
            body = body.dropFirst(3)
        } else if body.starts(with: [0xFF, 0xFE]) || body.starts(with: [0xFE, 0xFF]) {
            let message = "the file is UTF-16 (byte-order mark FF FE or FE FF): save it as UTF-8"
            fatal = message
            emit(.error(line: 1, message: message))
            return
        } else if body.prefix(4).contains(0) {
            let message = "the file starts with NUL bytes: it looks like UTF-16 without a byte-order mark; save it as UTF-8"
            fatal = message
            emit(.error(line: 1, message: message))
            return
        }
        for byte in body { step(byte, emit) }
    }

    private mutating func step(_ byte: UInt8, _ emit: (Event) -> Void) {
        switch state {
        case .fieldStart:
            switch byte {
            case 0x22: state = .quoted
            case 0x2C: endField()
            case 0x0A: endRow(emit)
            case 0x0D: state = .carriageReturn
            default: keep(byte); state = .unquoted
            }
        case .unquoted:
            switch byte {
            case 0x2C: endField(); state = .fieldStart
            case 0x0A: endRow(emit)
            case 0x0D: state = .carriageReturn
            case 0x22:
                if rowError == nil { rowError = "a quote inside an unquoted field (quote the whole field and double the quote)" }
            default: keep(byte)
            }
        case .quoted:
            if byte == 0x22 {
                state = .quoteInQuoted
            } else {
                if byte == 0x0A { line += 1 }
                keep(byte)
            }
        case .quoteInQuoted:
            switch byte {
            case 0x22: keep(0x22); state = .quoted
            case 0x2C: endField(); state = .fieldStart
            case 0x0A: endRow(emit)
            case 0x0D: state = .carriageReturn
            default:
                if rowError == nil { rowError = "characters after a closing quote" }
                state = .unquoted
            }
        case .carriageReturn:
            if byte == 0x0A {
                if firstCRLFLine == nil { firstCRLFLine = line }
                endRow(emit)
            } else {
                if rowError == nil { rowError = "a carriage return is not followed by a line feed" }
                state = .unquoted
                step(byte, emit)
            }
        }
    }

    /// Adds `byte` to the field, or past `maxRecordBytes` marks the record too long and drops it.
    private mutating func keep(_ byte: UInt8) {
        guard counted() else { return }
        field.append(byte)
    }

    /// Counts one byte of the current record: false once the record is over `maxRecordBytes`.
    private mutating func counted() -> Bool {
        guard recordBytes < maxRecordBytes else {
            if rowError == nil { rowError = "the record is longer than \(maxRecordBytes) bytes; the rest of it was skipped" }
            return false
        }
        recordBytes += 1
        return true
    }

    /// Ends a field at a separator (`counting`: the comma is one byte of the record, so a line of
    /// commas is bounded too) or at the line's end (not counted: the limit is the record's bytes
    /// without its line ending).
    private mutating func endField(counting: Bool = true) {
        if !counting || counted() { fields.append(field) }
        field.removeAll(keepingCapacity: true)
    }

    private mutating func endRow(_ emit: (Event) -> Void) {
        let blank = fields.isEmpty && field.isEmpty && rowError == nil
        endField(counting: false)
        let row = fields
        let startLine = rowLine
        let error = rowError
        fields.removeAll(keepingCapacity: true)
        rowError = nil
        recordBytes = 0
        state = .fieldStart
        line += 1
        rowLine = line
        if blank { return }
        if let error { emit(.error(line: startLine, message: error)); return }
        emit(.record(line: startLine, fields: row))
    }

    /// Notes on what was accepted: a byte-order mark skipped, CRLF line endings.
    var notes: [String] {
        var notes: [String] = []
        if sawByteOrderMark { notes.append("line 1: a UTF-8 byte-order mark at the start was skipped") }
        if let line = firstCRLFLine {
            notes.append("line \(line): CRLF line endings (Windows) were accepted (the first one ends this line)")
        }
        return notes
    }

    /// The record for an error message: at most 80 characters, control characters, DEL and bytes
    /// that are not valid UTF-8 shown as `\xNN`, so no raw byte from the file reaches a terminal.
    static func preview(_ row: [[UInt8]]) -> String {
        var bytes: [UInt8] = []
        for (index, field) in row.enumerated() {
            if index > 0 { bytes.append(0x2C) }
            bytes += field
        }
        return escaped(bytes, limit: 80)
    }

    /// `bytes` as printable text: printable ASCII and valid UTF-8 sequences as they are
    /// (except C1 controls), everything else `\xNN`; cut after `limit` characters with `...`.
    static func escaped(_ bytes: [UInt8], limit: Int) -> String {
        var out = ""
        var count = 0
        var index = 0
        while index < bytes.count {
            if count >= limit { return out + "..." }
            let byte = bytes[index]
            let length = byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC2 ? 2 : 0
            if length > 1, index + length <= bytes.count,
               let text = String(validating: bytes[index..<index + length], as: UTF8.self),
               text.unicodeScalars.allSatisfy({ !(0x80...0x9F).contains($0.value) && $0.properties.generalCategory != .format }) {
                out += text
                index += length
            } else {
                out += (0x20...0x7E).contains(byte) ? String(UnicodeScalar(byte)) : "\\x" + String(format: "%02X", byte)
                index += 1
            }
            count += 1
        }
        return out
    }
}

extension String {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s.removeFirst() }
        while s.last == " " || s.last == "\t" { s.removeLast() }
        return String(s)
    }
}
