import Foundation

/// A transfer refused before any Apple call; `description` says what is wrong and what to do.
public struct TransferRuleError: Error, CustomStringConvertible, Sendable, Equatable {
    public let message: String
    public var description: String { message }
}

/// Checks on the recipient team ID sent as `target` (apple-api.md §4.2).
public enum TransferTarget {
    /// Refuses a team ID that is not 10 characters `[A-Z0-9]` (Apple Team IDs are upper case; a
    /// lower-case copy would slip past the own-team check and match no account).
    /// - Parameter field: the name shown in the message, e.g. `team-id`.
    /// - Throws: `TransferRuleError` naming `field`.
    public static func validateTeamID(_ value: String, field: String) throws(TransferRuleError) {
        guard isTeamID(value) else {
            throw TransferRuleError(message: "\(field) '\(value.prefix(40))' is not a 10-character Apple Team ID ([A-Z0-9]{10}): "
                + "copy the team's ID from its membership page")
        }
    }

    static func isTeamID(_ value: String) -> Bool {
        value.utf8.count == 10 && value.utf8.allSatisfy { (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }
    }

    /// Refuses a `target` that is not a 10-character Apple Team ID (`[A-Z0-9]{10}`) or that equals
    /// the sending team: Apple accepts its own team as target and returns transfer identifiers no
    /// recipient can use (nov/apple_id#21), so this is checked before any call.
    /// - Throws: `TransferRuleError` naming the field.
    public static func validate(_ target: String, sender: String) throws(TransferRuleError) {
        guard isTeamID(target) else {
            throw TransferRuleError(message: "target '\(target.prefix(40))' is not a 10-character Apple Team ID ([A-Z0-9]{10}): "
                + "pass the recipient team's ID from its membership page")
        }
        guard target != sender else {
            throw TransferRuleError(message: "target \(target) is the sending team itself: transfer identifiers must be "
                + "generated for the recipient team's ID, not your own")
        }
    }
}

/// The 60-day migration window (TN3159): both teams may call `/auth/usermigrationinfo` from the
/// transfer until 60 days after the day it was accepted. Dates are calendar days in UTC.
public struct TransferWindow: Sendable, Equatable {
    public static let days = 60
    /// The day the transfer was accepted (UTC midnight).
    public let transferDate: Date

    /// - Parameter day: `YYYY-MM-DD`.
    /// - Throws: `TransferRuleError` naming `transfer_date` when it is not a valid date.
    public init(day: String) throws(TransferRuleError) {
        guard let date = Self.parse(day) else {
            throw TransferRuleError(message: "transfer_date '\(day.prefix(40))' is not a date (expected YYYY-MM-DD, "
                + "the day the recipient team accepted the app transfer)")
        }
        transferDate = date
    }

    /// `YYYY-MM-DD`.
    public var day: String { Self.format(transferDate) }
    /// The last day the migration endpoint serves this transfer.
    public var closesOn: String { Self.format(transferDate.addingTimeInterval(Double(Self.days) * 86_400)) }

    /// Days left on `now`'s UTC day: 60 on the transfer day, 0 on the last day, negative after.
    /// Before the transfer (exports may run early) it is more than 60.
    /// - Parameter now: the current time, from the caller's `WallClock`.
    public func daysLeft(now: Date) -> Int {
        let today = floor(now.timeIntervalSince1970 / 86_400)
        let start = floor(transferDate.timeIntervalSince1970 / 86_400)
        return Self.days - Int(today - start)
    }

    /// - Parameter now: the current time, from the caller's `WallClock`.
    /// - Throws: `TransferRuleError` once the window has closed (on `now`'s UTC day), naming the recovery.
    public func requireOpen(now: Date) throws(TransferRuleError) {
        let left = daysLeft(now: now)
        guard left >= 0 else {
            throw TransferRuleError(message: "the 60-day migration window for the transfer of \(day) closed on \(closesOn) "
                + "(\(-left) days ago): Apple no longer serves /auth/usermigrationinfo for it. Recovery: transfer the app "
                + "back to the sending team, then transfer it again, and run the export and import again with the new "
                + "--transfer-date")
        }
    }

    /// Exports may run before the recipient accepts (apple-api.md §4.2 "Timing"), but an app
    /// transfer request that is not accepted expires (App Store Connect allows 60 days), so a date
    /// further ahead is a typo.
    public static let maxExportDaysAhead = 60
    /// An import's date is the day the transfer was accepted: today or earlier; 1 day of slack for
    /// a recipient whose local date is ahead of UTC.
    public static let maxImportDaysAhead = 1

    /// - Parameter now: the current time, from the caller's `WallClock`.
    /// - Throws: `TransferRuleError` naming `transfer_date` when it is more than `maxDaysAhead`
    ///   days after `now`'s UTC day.
    public func requireNotAhead(maxDaysAhead: Int, purpose: String, now: Date) throws(TransferRuleError) {
        let ahead = daysLeft(now: now) - Self.days
        guard ahead <= maxDaysAhead else {
            throw TransferRuleError(message: "transfer_date \(day) is \(ahead) days in the future: \(purpose) accepts at most "
                + "\(maxDaysAhead) day\(maxDaysAhead == 1 ? "" : "s") ahead. Pass the day the recipient team accepted "
                + "(or will accept) the app transfer, YYYY-MM-DD in UTC")
        }
    }

    static func parse(_ text: String) -> Date? {
        // Exactly YYYY-MM-DD in ASCII digits (Int alone would take "+1" or "005").
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes.enumerated().allSatisfy({ $0.offset == 4 || $0.offset == 7 || (0x30...0x39).contains($0.element) }) else { return nil }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
              (1970...9999).contains(y), (1...12).contains(m), (1...31).contains(d) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        guard let date = calendar.date(from: DateComponents(year: y, month: m, day: d)),
              calendar.component(.day, from: date) == d else { return nil }
        return date
    }

    static func format(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let c = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0)
    }
}
