import AppleID
import Foundation
import SIWACore

/// Reads an `accounts import` file in chunks of 1 MiB, so a file of any size is streamed, never
/// held in memory. Two formats, told apart by the first byte that is not blank (a UTF-8
/// byte-order mark is skipped):
///
/// - `{`: JSON lines (one object per line; keys are column names, values strings, booleans,
///   whole numbers for `external_user_id`, `1`/`0` for `is_private_email`, or null; any other
///   number, or an object or array, is a bad row naming the field). Line numbers count every line.
/// - anything else: CSV with a header (RFC 4180, `CSVRecordParser`), columns in any order, names
///   compared case-insensitively. Line numbers are the file's (the header is line 1).
///
/// Columns (`AccountColumns`): `external_user_id` and `sub` required; `refresh_token`, `email`,
/// `is_private_email`, `token_checked_at` optional. An unknown column refuses the file (a typo
/// would silently drop data). Errors name the line and the field, never a value.
struct AccountFileReader {
    /// What one `next` call read: checked rows and refused ones, in file order per kind.
    struct Batch {
        var rows: [ImportedAccount] = []
        var errors: [ImportRowError] = []
    }

    enum Format: String, Sendable { case csv, jsonLines = "json-lines" }

    let input: InputFile
    var chunkSize = 1 << 20
    private(set) var bytes: Int64 = 0
    private(set) var format: Format?
    /// A problem with the file as a whole (unreadable, UTF-16, a bad header): no row is read after it.
    private(set) var fileError: ImportRowError?
    private var csv = CSVRecordParser()
    private var columns: [String]?
    /// Each column's position, from the header.
    private var columnIndex: [String: Int] = [:]
    private var jsonBuffer: [UInt8] = []
    /// The current JSON line is over `CSVRecordParser.defaultMaxRecordBytes`: its bytes are dropped.
    private var jsonOverlong = false
    private var jsonLine = 1
    private var sawByteOrderMark = false
    private var pending = Batch()
    private var finished = false

    init(input: InputFile) {
        self.input = input
    }

    /// Notes on what was accepted (a byte-order mark, CRLF line endings), each naming its line.
    var notes: [String] { format == .jsonLines ? (sawByteOrderMark ? ["line 1: a UTF-8 byte-order mark at the start was skipped"] : []) : csv.notes }

    /// The next rows and errors, at least `size` rows unless the file ends first; nil at the end.
    mutating func next(size: Int) -> Batch? {
        while !finished && pending.rows.count < size {
            let data: [UInt8]
            do {
                data = try input.read(upTo: chunkSize)
            } catch {
                fail(ImportRowError(line: jsonLine, field: nil, reason: "reading \(input.displayName) failed: \(error.reasonText)"))
                finished = true
                break
            }
            bytes += Int64(data.count)
            if data.isEmpty {
                finished = true
                finish()
            } else {
                feed(data)
            }
        }
        if finished && pending.rows.isEmpty && pending.errors.isEmpty { return nil }
        defer { pending = Batch() }
        return pending
    }

    /// Records a problem with the file as a whole and stops reading it: no row is read after it,
    /// and a stream that never ends (`/dev/zero`, a pipe) is not read on for nothing.
    private mutating func fail(_ error: ImportRowError) {
        guard fileError == nil else { return }
        fileError = error
        pending.errors.append(error)
        finished = true
    }

    private mutating func feed(_ data: [UInt8]) {
        var data = data[...]
        if format == nil {
            if bytes == Int64(data.count), data.starts(with: [0xEF, 0xBB, 0xBF]) { sawByteOrderMark = true }
            let body = sawByteOrderMark && bytes == Int64(data.count) ? data.dropFirst(3) : data
            guard let first = body.first(where: { ![0x20, 0x09, 0x0D, 0x0A].contains($0) }) else {
                jsonBuffer += data   // only blanks so far: decide with the next chunk
                return
            }
            format = first == 0x7B ? .jsonLines : .csv
            data = jsonBuffer[...] + data
            jsonBuffer = []
            if format == .jsonLines && sawByteOrderMark { data = data.dropFirst(3) }
        }
        if format == .jsonLines { feedJSON(data) } else { feedCSV(Array(data)) }
    }

    private mutating func finish() {
        if format == nil {
            format = .csv
            feedCSV(jsonBuffer)
            jsonBuffer = []
        }
        if format == .jsonLines {
            if jsonOverlong { jsonTooLong() } else if !jsonBuffer.isEmpty { jsonRecord(jsonBuffer) }
            if pending.rows.isEmpty && pending.errors.isEmpty && jsonLine == 1 { fail(.init(line: 1, field: nil, reason: "the file is empty")) }
            return
        }
        var parser = CSVRecordParser()
        swap(&parser, &csv)
        parser.finish { csvEvent($0) }
        swap(&parser, &csv)
        if columns == nil { fail(ImportRowError(line: 1, field: nil, reason: "the file is empty: expected a header such as 'external_user_id,sub,refresh_token'")) }
    }

    // MARK: CSV

    /// Records are handled as they are parsed (the parser is moved out of `self` meanwhile), so
    /// a chunk's records are never all held at once.
    private mutating func feedCSV(_ data: [UInt8]) {
        var parser = CSVRecordParser()
        swap(&parser, &csv)
        defer { swap(&parser, &csv) }
        parser.feed(data) { csvEvent($0) }
    }

    private mutating func csvEvent(_ event: CSVRecordParser.Event) {
        guard fileError == nil else { return }
        switch event {
        case let .error(line, message) where columns == nil:
            fail(ImportRowError(line: line, field: nil, reason: message))
        case let .error(line, message):
            pending.errors.append(ImportRowError(line: line, field: nil, reason: message))
        case let .record(line, fields) where columns == nil:
            header(fields, line: line)
        case let .record(line, fields):
            guard let columns, fields.count == columns.count else {
                pending.errors.append(ImportRowError(line: line, field: nil, reason: "expected \(columns?.count ?? 0) columns "
                    + "(\((columns ?? []).joined(separator: ","))), found \(fields.count)"))
                return
            }
            let index = columnIndex
            append(AccountColumns.check(line: line) { name in index[name].map { .text(fields[$0]) } })
        }
    }

    private mutating func header(_ fields: [[UInt8]], line: Int) {
        let names = fields.map { String(decoding: $0, as: UTF8.self).trimmingSpaces().lowercased() }
        let unknown = names.filter { !AccountColumns.all.contains($0) }
        let repeated = Set(names.filter { name in names.filter { $0 == name }.count > 1 })
        let missing = AccountColumns.required.filter { !names.contains($0) }
        var problems: [String] = []
        if !unknown.isEmpty { problems.append("unknown column '\(CSVRecordParser.escaped(Array(unknown[0].utf8), limit: 40))'") }
        if !repeated.isEmpty { problems.append("column '\(repeated.sorted()[0])' appears twice") }
        if !missing.isEmpty { problems.append("missing column \(missing.map { "'\($0)'" }.joined(separator: " and "))") }
        guard problems.isEmpty else {
            fail(ImportRowError(line: line, field: nil, reason: "header: " + problems.joined(separator: "; ")
                + " (columns: \(AccountColumns.required.joined(separator: ", ")) required; "
                + "\(AccountColumns.optional.joined(separator: ", ")) optional)"))
            return
        }
        columns = names
        for (position, name) in names.enumerated() { columnIndex[name] = position }
    }

    private mutating func append(_ result: Result<ImportedAccount, ImportRowError>) {
        switch result {
        case .success(let row): pending.rows.append(row)
        case .failure(let error): pending.errors.append(error)
        }
    }

    // MARK: JSON lines

    private mutating func feedJSON(_ data: ArraySlice<UInt8>) {
        var start = data.startIndex
        while let newline = data[start...].firstIndex(of: 0x0A) {
            keepJSON(data[start..<newline])
            if jsonOverlong { jsonTooLong() } else { jsonRecord(jsonBuffer) }
            jsonBuffer.removeAll(keepingCapacity: true)
            jsonOverlong = false
            start = newline + 1
        }
        keepJSON(data[start...])
    }

    /// Adds bytes of the current line, unless that makes it longer than a record may be: then the
    /// line is marked and its bytes dropped (memory stays bounded whatever a line's length).
    private mutating func keepJSON(_ bytes: ArraySlice<UInt8>) {
        guard !jsonOverlong else { return }
        guard jsonBuffer.count + bytes.count <= CSVRecordParser.defaultMaxRecordBytes else {
            jsonOverlong = true
            jsonBuffer = []
            return
        }
        jsonBuffer += bytes
    }

    private mutating func jsonTooLong() {
        let line = jsonLine
        jsonLine += 1
        guard fileError == nil else { return }
        pending.errors.append(ImportRowError(line: line, field: nil,
            reason: "the line is longer than \(CSVRecordParser.defaultMaxRecordBytes) bytes; the rest of it was skipped"))
    }

    /// `text` (a JSON number) when it is a whole number written as Int64 writes it back, else nil.
    static func wholeNumber(_ text: String) -> String? {
        guard let integer = Int64(text), String(integer) == text else { return nil }
        return text
    }

    private mutating func jsonRecord(_ raw: [UInt8]) {
        let line = jsonLine
        jsonLine += 1
        guard fileError == nil else { return }
        var bytes = raw[...]
        while let last = bytes.last, [0x20, 0x09, 0x0D].contains(last) { bytes.removeLast() }
        guard bytes.contains(where: { ![0x20, 0x09].contains($0) }) else { return }
        // The strict RFC 8259 reader Apple's answers go through: it keeps every member in order, so
        // a field given twice is refused (as a CSV header naming a column twice is) instead of one
        // value silently winning.
        let notAnObject = ImportRowError(line: line, field: nil,
                                          reason: "not a JSON object of strings, booleans and integers (JSON lines: one object per line)")
        guard let object = try? JSONObjectScanner.members(of: Array(bytes)) else { return pending.errors.append(notAnObject) }
        if let unknown = object.members.map(\.key).sorted().first(where: { !AccountColumns.all.contains($0) }) {
            pending.errors.append(ImportRowError(line: line, field: nil, reason: "unknown field '"
                + CSVRecordParser.escaped(Array(unknown.utf8), limit: 40) + "' (fields: \(AccountColumns.all.joined(separator: ", ")))"))
            return
        }
        // A refused row is still named in the rejects file by its user and sub, when given once
        // (the user id as text or as a whole number).
        func refused(_ field: String, _ reason: String) -> ImportRowError {
            func single(_ name: String) -> String? {
                let given = object.members.filter { $0.key == name }
                guard given.count == 1 else { return nil }
                switch given[0].value {
                case .string(let text): return text
                case .number(let text) where name == "external_user_id": return Self.wholeNumber(text)
                default: return nil
                }
            }
            return ImportRowError(line: line, field: field, reason: reason, externalUserID: single("external_user_id"),
                                  sub: single("sub").flatMap { AccountColumns.printableASCII(Array($0.utf8)) ? $0 : nil })
        }
        var fields: [String: AccountColumns.Value] = [:], seen: Set<String> = []
        for (key, member) in object.members {
            guard seen.insert(key).inserted else { return pending.errors.append(refused(key, "is given more than once in the object")) }
            switch member {
            case .null: continue
            case .bool(let flag): fields[key] = .bool(flag)
            case .string(let text): fields[key] = .text(Array(text.utf8))
            case .number(let text):
                switch key {
                case "external_user_id":
                    // Kept exactly as written: a whole number in JSON's own form (no fraction,
                    // exponent or -0), within 64 bits.
                    guard let whole = Self.wholeNumber(text) else {
                        return pending.errors.append(refused(key, "must be a string or a whole number (no fraction or exponent, "
                            + "within the 64-bit integer range)"))
                    }
                    fields[key] = .text(Array(whole.utf8))
                case "is_private_email", "token_checked_at":
                    // Checked as the CSV's text is: 1 and 0 are booleans; a time must be RFC 3339.
                    fields[key] = .text(Array(text.utf8))
                default:
                    // A numeric token, sub or email is a broken export (a refresh token stored as a
                    // number would be sent to Apple, judged invalid_grant and mark the account invalid).
                    return pending.errors.append(refused(key, "must be a string, not a number"))
                }
            case .nested: return pending.errors.append(refused(key, "must be a string, not an object or an array"))
            }
        }
        append(AccountColumns.check(fields, line: line))
    }
}
