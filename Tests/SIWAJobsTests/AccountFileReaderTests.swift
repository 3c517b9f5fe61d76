import Foundation
import SIWACore
import Testing
@testable import SIWAJobs

/// The `accounts import` file reader (pure, no database): CSV with a header in any column order
/// and JSON lines, the same rows whatever the chunking, errors by line and field without values.
@Suite struct AccountFileReaderTests {
    static func read(_ text: String, chunk: Int = 1 << 20)
        throws -> (rows: [ImportedAccount], errors: [String], reader: AccountFileReader, named: [ImportRowError]) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("reader-\(UUID().uuidString)").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let input = try InputFile.open(path)
        defer { input.close() }
        var reader = AccountFileReader(input: input)
        reader.chunkSize = chunk
        var rows: [ImportedAccount] = [], named: [ImportRowError] = []
        while let batch = reader.next(size: 2) {
            rows += batch.rows
            named += batch.errors
        }
        return (rows, named.map(\.message), reader, named)
    }

    static let csv = "\u{FEFF}Sub,external_user_id,refresh_token,is_private_email,token_checked_at,email\r\n"
        + "001.a.1,u1,rA.0.x,true,2026-11-30T03:04:05Z,a@privaterelay.appleid.com\r\n"
        + "001.b.2,\"u,2\",,f,,\r\n"
        + "\r\n"
        + "001.c.3,u3,rC.0.x,yes,2024-02-29 23:59:59.123456+05:30,c@example.com\r\n"

    @Test(arguments: [1, 2, 5, 64, 1 << 20])
    func csvRowsAreTheSameWhateverTheChunking(chunk: Int) throws {
        let result = try Self.read(Self.csv, chunk: chunk)
        #expect(result.errors.isEmpty, "\(result.errors)")
        #expect(result.rows.map(\.externalUserID) == ["u1", "u,2", "u3"])
        #expect(result.rows.map(\.line) == [2, 3, 5])
        #expect(result.rows[0].refreshToken == "rA.0.x" && result.rows[1].refreshToken == nil)
        #expect(result.rows.map(\.isPrivateEmail) == [true, false, true])
        #expect(result.rows[1].email == nil && result.rows[2].tokenCheckedAt == "2024-02-29 23:59:59.123456+05:30")
        #expect(result.reader.format == .csv)
        #expect(result.reader.notes.count == 2, "byte-order mark and CRLF noted: \(result.reader.notes)")
    }

    @Test func badValuesAreNamedByLineAndFieldNeverByValue() throws {
        let text = "external_user_id,sub,refresh_token,email,is_private_email,token_checked_at\n"
            + "u1,,rSECRET1,,,\n"                       // 2: sub empty
            + ",s2,rSECRET2,,,\n"                       // 3: user empty
            + "u3,s 3,rSECRET3,,,\n"                    // 4: space in sub
            + "u4,s4,rSECRET 4,,,\n"                    // 5: space in token
            + "u5,s5,rSECRET5,nope,,\n"                 // 6: not an email
            + "u6,s6,rSECRET6,,perhaps,\n"              // 7: not a boolean
            + "u7,s7,rSECRET7,,,2023-02-29T00:00:00Z\n" // 8: no such day
            + "u8,s8,rSECRET8,,,2026-01-01T00:00:00\n"  // 9: no offset
            + "u9,s9\n"                                 // 10: too few columns
            + "u10,s10,rOK,,,\n"
        let result = try Self.read(text, chunk: 3)
        #expect(result.errors == [
            "line 2: sub: is empty", "line 3: external_user_id: is empty",
            "line 4: sub: contains a space, control or non-ASCII character",
            "line 5: refresh_token: contains a space, control or non-ASCII character",
            "line 6: email: is not an email address (one @, no spaces or control characters)",
            "line 7: is_private_email: expected true or false (also t/f, 1/0, yes/no)",
            "line 8: token_checked_at: expected an RFC 3339 time with an offset, e.g. 2026-11-30T03:04:05Z",
            "line 9: token_checked_at: expected an RFC 3339 time with an offset, e.g. 2026-11-30T03:04:05Z",
            "line 10: expected 6 columns (external_user_id,sub,refresh_token,email,is_private_email,token_checked_at), found 2",
        ])
        #expect(!result.errors.joined().contains("SECRET"))
        #expect(result.rows.map(\.externalUserID) == ["u10"])
    }

    @Test func headerProblemsRefuseTheFile() throws {
        let unknown = try Self.read("external_user_id,sub,refresh_tokn\nu1,s1,r1\n")
        #expect(unknown.errors.count == 1 && unknown.errors[0].hasPrefix("line 1: header: unknown column 'refresh_tokn'"), "\(unknown.errors)")
        #expect(unknown.rows.isEmpty && unknown.reader.fileError != nil)
        let missing = try Self.read("external_user_id,email\nu1,a@b.c\n")
        #expect(missing.errors.first?.hasPrefix("line 1: header: missing column 'sub'") == true, "\(missing.errors)")
        let empty = try Self.read("")
        #expect(empty.errors.first?.hasPrefix("line 1: the file is empty") == true)
    }

    /// A file-level error ends the reading: what follows it is not read (`/dev/zero` or a pipe
    /// that never ends would otherwise be read forever).
    @Test func aFileErrorStopsTheReading() throws {
        let badHeader = "external_user_id,sub,refresh_tokn\n" + String(repeating: "u1,s1,r1\n", count: 100_000)
        let header = try Self.read(badHeader, chunk: 1024)
        #expect(header.errors.count == 1 && header.errors[0].hasPrefix("line 1: header: unknown column"), "\(header.errors)")
        #expect(header.reader.bytes == 1024, "read \(header.reader.bytes) of \(badHeader.utf8.count) bytes")
        let zeros = try Self.read(String(repeating: "\u{0}", count: 3 << 20), chunk: 1 << 16)
        #expect(zeros.errors.count == 1 && zeros.errors[0].contains("NUL bytes"), "\(zeros.errors)")
        #expect(zeros.reader.bytes == 1 << 16, "read \(zeros.reader.bytes) of \(3 << 20) bytes")
    }

    @Test(arguments: [1, 4, 1 << 20])
    func jsonLines(chunk: Int) throws {
        let text = #"{"external_user_id":"u1","sub":"s1","refresh_token":"r1","is_private_email":true}"# + "\n"
            + "\n"
            + #"{"external_user_id":42,"sub":"s2","email":null,"is_private_email":"false"}"# + "\r\n"
            + #"{"external_user_id":"u3","sub":"s3","refresh_token":"rSECRET","colour":"red"}"# + "\n"
            + #"["not an object"]"# + "\n"
            + #"{"external_user_id":"u5","sub":"s5","token_checked_at":"2026-11-30T03:04:05.5-08:00"}"#
        let result = try Self.read(text, chunk: chunk)
        #expect(result.reader.format == .jsonLines)
        #expect(result.rows.map(\.externalUserID) == ["u1", "42", "u5"])
        #expect(result.rows.map(\.line) == [1, 3, 6])
        #expect(result.rows.map(\.isPrivateEmail) == [true, false, nil])
        #expect(result.errors == [
            "line 4: unknown field 'colour' (fields: external_user_id, sub, refresh_token, email, is_private_email, token_checked_at)",
            "line 5: not a JSON object of strings, booleans and integers (JSON lines: one object per line)",
        ])
    }

    /// A field given twice in one object is refused by line and field (a CSV header naming a column
    /// twice is refused too), and so is a value of the wrong JSON type, naming the field: an
    /// object or array anywhere, a number in a text field (a refresh token, sub or email), a user
    /// id that is not a whole number as written (`-0`, a fraction, an exponent, over 64 bits).
    @Test(arguments: [1, 1 << 20])
    func aJSONFieldGivenTwiceIsRefused(chunk: Int) throws {
        let text = #"{"external_user_id":"u1","sub":"s1","sub":"s1-other"}"# + "\n"
            + #"{"external_user_id":"u2","sub":"s2","is_private_email":false,"is_private_email":true}"# + "\n"
            + #"{"external_user_id":"u3","sub":"s3","email":{"nested":true}}"# + "\n"
            + #"{"external_user_id":1.5,"sub":"s4"}"# + "\n"
            + #"{"external_user_id":"u5","sub":"s5","email":null}"# + "\n"
            + #"{"external_user_id":"u6","sub":"s6","refresh_token":123456}"# + "\n"
            + #"{"external_user_id":7,"sub":70}"# + "\n"
            + #"{"external_user_id":8,"sub":"s8","email":7}"# + "\n"
            + #"{"external_user_id":"u9","sub":"s9","refresh_token":1e3}"# + "\n"
            + #"{"external_user_id":-0,"sub":"s10"}"# + "\n"
            + #"{"external_user_id":99999999999999999999,"sub":"s11"}"# + "\n"
            + #"{"external_user_id":-12,"sub":"s12","is_private_email":1}"# + "\n"
            + #"{"external_user_id":"u13","sub":"s13","is_private_email":2}"# + "\n"
            + #"{"external_user_id":true,"sub":"s14"}"# + "\n"
            + #"{"external_user_id":"u15","sub":false}"# + "\n"
        let result = try Self.read(text, chunk: chunk)
        #expect(result.rows.map(\.externalUserID) == ["u5", "-12"])
        #expect(result.rows.last?.isPrivateEmail == true)
        let whole = "must be a string or a whole number (no fraction or exponent, within the 64-bit integer range)"
        #expect(Array(result.errors.prefix(10)) == [
            "line 1: sub: is given more than once in the object",
            "line 2: is_private_email: is given more than once in the object",
            "line 3: email: must be a string, not an object or an array",
            "line 4: external_user_id: \(whole)",
            "line 6: refresh_token: must be a string, not a number",
            "line 7: sub: must be a string, not a number",
            "line 8: email: must be a string, not a number",
            "line 9: refresh_token: must be a string, not a number",
            "line 10: external_user_id: \(whole)",
            "line 11: external_user_id: \(whole)",
        ])
        #expect(result.errors.count == 13 && result.errors[10].hasPrefix("line 13: is_private_email: "), "\(result.errors)")
        #expect(Array(result.errors.suffix(2)) == ["line 14: external_user_id: expected text, found a boolean",
                                                   "line 15: sub: expected text, found a boolean"])
        // ... and still name the row by the other required field.
        let booleans = Array(result.named.suffix(2))
        #expect(booleans.map(\.externalUserID) == [nil, "u15"] && booleans.map(\.sub) == ["s14", nil], "\(booleans)")
        // The rejects file still names the row by what was given once: line 2's user and sub,
        // line 1's user only (its sub is the field given twice).
        let named = result.named.prefix(2)
        #expect(named.map(\.externalUserID) == ["u1", "u2"] && named.map(\.sub) == [nil, "s2"])
        // Each row named by what was given once as text (the user id also as a whole number);
        // line 7's sub is the bad field, line 10's user id too.
        let numeric = Array(result.named[4...8])
        #expect(numeric.map(\.externalUserID) == ["u6", "7", "8", "u9", nil], "\(numeric)")
        #expect(numeric.map(\.sub) == ["s6", nil, "s8", "s9", "s10"], "\(numeric)")
    }

    /// A line longer than a record may be is refused by line, and the rows after it still load:
    /// an unquoted field, a quoted one spanning lines, a line of separators, a JSON line.
    @Test(arguments: [7, 1 << 20])
    func anOverlongLineIsRefusedAndTheRestLoad(chunk: Int) throws {
        let huge = String(repeating: "x", count: 200_000)
        let csv = "external_user_id,sub,refresh_token\n"
            + "u1,s1,r\(huge)\n"                          // 2
            + "u2,s2,r2\n"                                 // 3
            + "u3,s3,\"r\(huge)\n\(huge)\"\n"             // 4-5
            + String(repeating: ",", count: 100_000) + "\n" // 6
            + "u4,s4,r4\n"                                 // 7
        let fromCSV = try Self.read(csv, chunk: chunk)
        let tooLong = "the record is longer than \(CSVRecordParser.defaultMaxRecordBytes) bytes; the rest of it was skipped"
        #expect(fromCSV.errors == ["line 2: \(tooLong)", "line 4: \(tooLong)", "line 6: \(tooLong)"])
        #expect(fromCSV.rows.map(\.externalUserID) == ["u2", "u4"])
        #expect(fromCSV.rows.map(\.line) == [3, 7])
        let jsonLines = "{\"external_user_id\":\"u1\",\"sub\":\"s1\",\"refresh_token\":\"r\(huge)\"}\n"
            + "{\"external_user_id\":\"u2\",\"sub\":\"s2\"}\n"
            + "{\"external_user_id\":\"u3\",\"sub\":\"s3\",\"refresh_token\":\"r\(huge)\"}"
        let fromJSON = try Self.read(jsonLines, chunk: chunk)
        let lineTooLong = "the line is longer than \(CSVRecordParser.defaultMaxRecordBytes) bytes; the rest of it was skipped"
        #expect(fromJSON.errors == ["line 1: \(lineTooLong)", "line 3: \(lineTooLong)"])
        #expect(fromJSON.rows.map(\.externalUserID) == ["u2"])
        #expect(fromJSON.reader.format == .jsonLines)
        // At the limit exactly a record is read (its line ending and quotes do not count); one byte more is not.
        for (line, fits) in [("ab,\"cd\",ef\r\n", true), ("ab,cd,efg\n", false), ("abcdefgh\n", true), ("abcdefghi\n", false)] {
            var parser = CSVRecordParser()
            parser.maxRecordBytes = 8
            var events: [CSVRecordParser.Event] = []
            parser.feed(Array(line.utf8)) { events.append($0) }
            parser.finish { events.append($0) }
            let read = events.contains { if case .record = $0 { true } else { false } }
            #expect(read == fits, "\(line.debugDescription): \(events)")
        }
    }
}
