import Foundation

/// Converts between `Date` and PostgreSQL's ISO 8601 timestamp text, without DateFormatter.
/// Output: `YYYY-MM-DDTHH:MM:SS.ffffffZ` in UTC (microsecond precision, PostgreSQL's own), with
/// a ` BC` suffix before year 1. Input: PostgreSQL's `DateStyle = ISO` output of `timestamptz`,
/// `timestamp` (read as UTC) and `date` (midnight UTC), e.g. `2026-11-30 03:04:05.123+05:30`.
/// https://www.postgresql.org/docs/15/datatype-datetime.html#DATATYPE-DATETIME-OUTPUT
enum PostgresTimestamp {
    private static let microsPerSecond: Int64 = 1_000_000

    static func format(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        if seconds.isNaN { return "infinity" }
        if seconds.isInfinite { return seconds < 0 ? "-infinity" : "infinity" }
        let micros = Int64((seconds * 1_000_000).rounded())
        let wholeSeconds = floorDivide(micros, microsPerSecond)
        let fraction = micros - wholeSeconds * microsPerSecond
        let days = floorDivide(wholeSeconds, 86_400)
        let secondOfDay = wholeSeconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        var output: [UInt8] = []
        output.reserveCapacity(30)
        append(year > 0 ? year : 1 - year, width: 4, to: &output)
        output.append(UInt8(ascii: "-"))
        append(Int64(month), width: 2, to: &output)
        output.append(UInt8(ascii: "-"))
        append(Int64(day), width: 2, to: &output)
        output.append(UInt8(ascii: "T"))
        append(secondOfDay / 3600, width: 2, to: &output)
        output.append(UInt8(ascii: ":"))
        append(secondOfDay / 60 % 60, width: 2, to: &output)
        output.append(UInt8(ascii: ":"))
        append(secondOfDay % 60, width: 2, to: &output)
        output.append(UInt8(ascii: "."))
        append(fraction, width: 6, to: &output)
        output.append(UInt8(ascii: "Z"))
        if year <= 0 { output.append(contentsOf: " BC".utf8) }
        return String(decoding: output, as: UTF8.self)
    }

    static func parse(_ text: String) throws(DatabaseError) -> Date {
        switch text {
        case "infinity": return .distantFuture
        case "-infinity": return .distantPast
        default: break
        }
        var scanner = ByteScanner(Array(text.utf8))
        guard var year = scanner.number(minDigits: 1, maxDigits: 9), scanner.take(UInt8(ascii: "-")),
              let month = scanner.number(minDigits: 2, maxDigits: 2), scanner.take(UInt8(ascii: "-")),
              let day = scanner.number(minDigits: 2, maxDigits: 2),
              (1...12).contains(month), (1...31).contains(day)
        else { throw invalid() }
        var secondOfDay: Int64 = 0
        var micros: Int64 = 0
        var offsetSeconds: Int64 = 0
        if scanner.take(UInt8(ascii: " ")) || scanner.take(UInt8(ascii: "T")) {
            guard let hour = scanner.number(minDigits: 2, maxDigits: 2), scanner.take(UInt8(ascii: ":")),
                  let minute = scanner.number(minDigits: 2, maxDigits: 2), scanner.take(UInt8(ascii: ":")),
                  let second = scanner.number(minDigits: 2, maxDigits: 2),
                  hour <= 24, minute <= 59, second <= 60
            else { throw invalid() }
            secondOfDay = hour * 3600 + minute * 60 + second
            if scanner.take(UInt8(ascii: ".")) {
                guard let (value, digits) = scanner.digits(), digits > 0 else { throw invalid() }
                micros = scale(value, digits: digits)
            }
            if scanner.take(UInt8(ascii: "Z")) {
                offsetSeconds = 0
            } else if let sign = scanner.takeSign() {
                guard let hours = scanner.number(minDigits: 2, maxDigits: 2) else { throw invalid() }
                var offset = hours * 3600
                _ = scanner.take(UInt8(ascii: ":"))
                if let minutes = scanner.number(minDigits: 2, maxDigits: 2) {
                    offset += minutes * 60
                    _ = scanner.take(UInt8(ascii: ":"))
                    if let seconds = scanner.number(minDigits: 2, maxDigits: 2) { offset += seconds }
                }
                offsetSeconds = sign * offset
            }
        }
        if scanner.takeSuffix(" BC") { year = 1 - year }
        guard scanner.atEnd else { throw invalid() }
        let days = days(fromYear: year, month: month, day: day)
        let utcSeconds = days * 86_400 + secondOfDay - offsetSeconds
        return Date(timeIntervalSince1970: Double(utcSeconds) + Double(micros) / 1_000_000)
    }

    private static func invalid() -> DatabaseError {
        DatabaseError.decoding("not an ISO 8601 timestamp (expected DateStyle ISO)")
    }

    /// `value` with `digits` fractional digits, as microseconds (truncated beyond 6 digits).
    private static func scale(_ value: Int64, digits: Int) -> Int64 {
        var result = value
        var count = digits
        while count < 6 { result *= 10; count += 1 }
        while count > 6 { result /= 10; count -= 1 }
        return result
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        let quotient = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? quotient - 1 : quotient
    }

    private static func append(_ value: Int64, width: Int, to output: inout [UInt8]) {
        let digits = Array(String(value).utf8)
        if digits.count < width { output.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - digits.count)) }
        output.append(contentsOf: digits)
    }

    /// Proleptic Gregorian date for a day count since 1970-01-01 (astronomical years: 0 = 1 BC).
    static func civil(fromDays dayCount: Int64) -> (year: Int64, month: Int, day: Int) {
        let shifted = dayCount + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), Int(month), Int(day))
    }

    /// Day count since 1970-01-01 for a proleptic Gregorian date (astronomical years).
    static func days(fromYear year: Int64, month: Int64, day: Int64) -> Int64 {
        let adjustedYear = month <= 2 ? year - 1 : year
        let era = (adjustedYear >= 0 ? adjustedYear : adjustedYear - 399) / 400
        let yearOfEra = adjustedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

/// A tiny forward-only reader over ASCII bytes.
private struct ByteScanner {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { position == bytes.count }

    mutating func take(_ byte: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    mutating func takeSign() -> Int64? {
        if take(UInt8(ascii: "+")) { return 1 }
        if take(UInt8(ascii: "-")) { return -1 }
        return nil
    }

    mutating func takeSuffix(_ suffix: String) -> Bool {
        let expected = Array(suffix.utf8)
        guard bytes.count - position == expected.count, Array(bytes[position...]) == expected else { return false }
        position = bytes.count
        return true
    }

    /// A run of `minDigits...maxDigits` decimal digits, or nil (position unchanged).
    mutating func number(minDigits: Int, maxDigits: Int) -> Int64? {
        let start = position
        var value: Int64 = 0
        while position < bytes.count, position - start < maxDigits, let digit = Self.digit(bytes[position]) {
            value = value * 10 + digit
            position += 1
        }
        if position - start < minDigits || (position < bytes.count && Self.digit(bytes[position]) != nil) {
            position = start
            return nil
        }
        return value
    }

    /// Any run of digits (value capped to 18 digits) and the number of digits read.
    mutating func digits() -> (Int64, Int)? {
        var value: Int64 = 0
        var count = 0
        while position < bytes.count, let digit = Self.digit(bytes[position]) {
            if count < 18 { value = value * 10 + digit }
            count += 1
            position += 1
        }
        return (value, min(count, 18))
    }

    private static func digit(_ byte: UInt8) -> Int64? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? Int64(byte - UInt8(ascii: "0")) : nil
    }
}
