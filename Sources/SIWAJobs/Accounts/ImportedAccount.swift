import Foundation

/// One row of an `accounts import` file, checked. `refreshToken` is plaintext: it lives only until
/// the importer seals it and is never printed, logged or put in an error.
struct ImportedAccount: Sendable {
    let line: Int
    let externalUserID: String
    let sub: String
    let refreshToken: String?
    let email: String?
    let isPrivateEmail: Bool?
    /// RFC 3339 text as given (checked here, parsed by PostgreSQL as `timestamptz`).
    let tokenCheckedAt: String?
}

/// A refused row: its line, the field at fault (nil for the row as a whole) and why. Never holds
/// a field's value except the row's `external_user_id` and `sub`, which identify it.
struct ImportRowError: Error, Sendable, Equatable {
    let line: Int
    let field: String?
    let reason: String
    var externalUserID: String?
    var sub: String?

    /// `line 7: sub: is empty`.
    var message: String { "line \(line): " + (field.map { "\($0): " } ?? "") + reason }
}

/// The columns of an import file and the rules each value follows.
enum AccountColumns {
    static let required = ["external_user_id", "sub"]
    static let optional = ["refresh_token", "email", "is_private_email", "token_checked_at"]
    static var all: [String] { required + optional }
    static let maxUserIDBytes = 512
    static let maxSubBytes = 256
    static let maxTokenBytes = 4096
    static let maxEmailBytes = 320

    /// A field's value as read: text (CSV, JSON string), a boolean (JSON), or absent (empty CSV
    /// field, JSON null or a missing key).
    enum Value: Sendable {
        case text([UInt8])
        case bool(Bool)
    }

    /// Checks one row's values by column name.
    /// - Returns: the account, or the first error (field and reason, never the value).
    static func check(_ values: [String: Value], line: Int) -> Result<ImportedAccount, ImportRowError> {
        check(line: line) { values[$0] }
    }

    /// Checks one row; `value` gives a column's value by name (nil: absent).
    static func check(line: Int, _ value: (String) -> Value?) -> Result<ImportedAccount, ImportRowError> {
        var error: ImportRowError?
        func fail(_ field: String?, _ reason: String) { if error == nil { error = ImportRowError(line: line, field: field, reason: reason) } }
        func text(_ name: String) -> [UInt8]? {
            switch value(name) {
            case .text(let bytes)?: return bytes.isEmpty ? nil : bytes
            case .bool?: fail(name, "expected text, found a boolean"); return nil
            case nil: return nil
            }
        }
        let user = text("external_user_id"), sub = text("sub"), token = text("refresh_token"), email = text("email")
        let checkedAt = text("token_checked_at")
        var isPrivate: Bool?
        switch value("is_private_email") {
        case .bool(let flag)?: isPrivate = flag
        case .text(let bytes)? where !bytes.isEmpty:
            isPrivate = parseBool(bytes)
            if isPrivate == nil { fail("is_private_email", "expected true or false (also t/f, 1/0, yes/no)") }
        default: break
        }
        // A required field given as a boolean says so (`fail` above), not that it is empty; the
        // refusal still names the row by the other one, for the rejects file.
        guard let user else {
            var refusal = (error?.field == "external_user_id" ? error : nil)
                ?? ImportRowError(line: line, field: "external_user_id", reason: "is empty")
            refusal.sub = sub.flatMap { printableASCII($0) ? String(decoding: $0, as: UTF8.self) : nil }
            return .failure(refusal)
        }
        guard let sub else {
            var refusal = (error?.field == "sub" ? error : nil) ?? ImportRowError(line: line, field: "sub", reason: "is empty")
            refusal.externalUserID = String(validating: user, as: UTF8.self)
            return .failure(refusal)
        }
        if user.count > maxUserIDBytes { fail("external_user_id", "is longer than \(maxUserIDBytes) bytes") }
        if user.contains(where: { $0 < 0x20 || $0 == 0x7F }) { fail("external_user_id", "contains a control character") }
        if sub.count > maxSubBytes { fail("sub", "is longer than \(maxSubBytes) characters") }
        if !printableASCII(sub) { fail("sub", "contains a space, control or non-ASCII character") }
        if let token {
            if token.count > maxTokenBytes { fail("refresh_token", "is longer than \(maxTokenBytes) characters") }
            if !printableASCII(token) { fail("refresh_token", "contains a space, control or non-ASCII character") }
        }
        if let email {
            if email.count > maxEmailBytes { fail("email", "is longer than \(maxEmailBytes) bytes") }
            if !email.contains(0x40) || email.contains(where: { $0 <= 0x20 || $0 == 0x7F }) {
                fail("email", "is not an email address (one @, no spaces or control characters)")
            }
        }
        if let checkedAt, !RFC3339.isValid(checkedAt) {
            fail("token_checked_at", "expected an RFC 3339 time with an offset, e.g. 2026-11-30T03:04:05Z")
        }
        let emailText = email.flatMap { String(validating: $0, as: UTF8.self) }
        guard let userText = String(validating: user, as: UTF8.self), email == nil || emailText != nil else {
            return .failure(ImportRowError(line: line, field: nil, reason: "not valid UTF-8"))
        }
        let subText = String(decoding: sub, as: UTF8.self)
        if var error {
            error.externalUserID = userText
            error.sub = printableASCII(sub) ? subText : nil
            return .failure(error)
        }
        return .success(ImportedAccount(
            line: line, externalUserID: userText, sub: subText, refreshToken: token.map { String(decoding: $0, as: UTF8.self) },
            email: emailText, isPrivateEmail: isPrivate, tokenCheckedAt: checkedAt.map { String(decoding: $0, as: UTF8.self) }))
    }

    static func printableASCII(_ bytes: [UInt8]) -> Bool { bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F } }

    static func parseBool(_ bytes: [UInt8]) -> Bool? {
        switch String(decoding: bytes, as: UTF8.self).lowercased() {
        case "true", "t", "1", "yes", "y": true
        case "false", "f", "0", "no", "n": false
        default: nil
        }
    }
}

/// RFC 3339 date-times (`2026-11-30T03:04:05Z`, `2026-11-30 03:04:05.123+05:30`): a calendar date
/// that exists, a time, optional fraction, and `Z` or an offset.
enum RFC3339 {
    static func isValid(_ bytes: [UInt8]) -> Bool {
        var i = 0
        func digits(_ n: Int) -> Int? {
            guard i + n <= bytes.count else { return nil }
            var value = 0
            for b in bytes[i..<i + n] {
                guard (0x30...0x39).contains(b) else { return nil }
                value = value * 10 + Int(b - 0x30)
            }
            i += n
            return value
        }
        func take(_ options: [UInt8]) -> Bool {
            guard i < bytes.count, options.contains(bytes[i]) else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), take([0x2D]), let month = digits(2), take([0x2D]), let day = digits(2),
              (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
              take([0x54, 0x74, 0x20]), let hour = digits(2), take([0x3A]), let minute = digits(2), take([0x3A]),
              let second = digits(2), hour <= 23, minute <= 59, second <= 60 else { return false }
        if take([0x2E]) {
            let start = i
            while i < bytes.count, (0x30...0x39).contains(bytes[i]) { i += 1 }
            guard i > start, i - start <= 9 else { return false }
        }
        if take([0x5A, 0x7A]) { return i == bytes.count }
        guard take([0x2B, 0x2D]), let offsetHours = digits(2), offsetHours <= 23 else { return false }
        if i == bytes.count { return true }
        _ = take([0x3A])
        guard let offsetMinutes = digits(2), offsetMinutes <= 59 else { return false }
        return i == bytes.count
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
