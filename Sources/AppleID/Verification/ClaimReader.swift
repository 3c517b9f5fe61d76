import Foundation

/// Reads claims leniently, the way Apple actually sends them (apple-api.md §7.2, §8.3):
/// booleans leniently with a warning for odd shapes (see `lenientBool`), numbers as JSON numbers
/// or (for time claims) numeric strings. A string or number claim of another shape is
/// `malformed`, naming it. JSON `null` counts as absent (booleans: see `lenientBool`).
struct ClaimReader {
    let members: [String: JSONValue]
    /// Prefix for error details: `claim` for top-level claims, `claim events` inside the event.
    let context: String

    private func bad(_ name: String, _ expected: String, _ value: JSONValue) -> JWTVerificationError {
        JWTVerificationError(.malformed, "\(context) \(name): expected \(expected), got \(value.kind)")
    }

    func has(_ name: String) -> Bool {
        if let value = members[name], value != .null { return true }
        return false
    }

    func string(_ name: String) throws(JWTVerificationError) -> String? {
        switch members[name] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case let value?: throw bad(name, "a string", value)
        }
    }

    /// A boolean claim, read leniently (apple-api.md §7.2, §8.3: Apple sends `true` and `"true"`,
    /// and other shapes appear in public bug reports): `true`/`false`, the strings
    /// `"true"`/`"false"` (any case, surrounding spaces ignored), `1`/`0` and `"1"`/`"0"`.
    /// Absent is nil. Any other shape (`"yes"`, `2`, `null`, an object, ...) is read as `false`
    /// and a warning naming the claim is appended to `warnings`: a correctly signed token is
    /// never rejected for the shape of a flag.
    func lenientBool(_ name: String, warnings: inout [String]) -> Bool? {
        guard let value = members[name] else { return nil }
        switch value {
        case .bool(let flag): return flag
        case .number(1): return true
        case .number(0): return false
        case .string(let text):
            switch text.trimmingCharacters(in: .whitespaces).lowercased() {
            case "true", "1": return true
            case "false", "0": return false
            default: break
            }
        default: break
        }
        warnings.append("\(context) \(name): \(Self.shown(value)) is not a boolean; read as false")
        return false
    }

    /// A short, safe rendering of an unexpected value for a warning: strings quoted (printable
    /// ASCII, at most 40 characters), integers as digits, other values by their JSON type.
    static func shown(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): "the string " + JWTVerificationError.quote(text)
        case .number(let number) where number == number.rounded() && abs(number) < 1e15: "the number \(Int64(number))"
        default: value.kind
        }
    }

    /// A whole number. Fractions are truncated toward zero; magnitudes beyond 2^53 are rejected.
    func integer(_ name: String, allowString: Bool) throws(JWTVerificationError) -> Int? {
        let number: Double
        switch members[name] {
        case nil, .null?: return nil
        case .number(let value)?: number = value
        case .string(let text)? where allowString:
            guard let value = Double(text.trimmingCharacters(in: .whitespaces)) else {
                throw JWTVerificationError(.malformed, "\(context) \(name): string is not a number")
            }
            number = value
        case let value?: throw bad(name, allowString ? "a number or numeric string" : "a number", value)
        }
        let limit = 9_007_199_254_740_992.0
        guard number.isFinite, abs(number) <= limit, let whole = Int(exactly: number.rounded(.towardZero)) else {
            throw JWTVerificationError(.malformed, "\(context) \(name): number out of range")
        }
        return whole
    }

    /// Largest time claim read as seconds since 1970 (10^11 s is the year 5138): a larger value
    /// is milliseconds sent where RFC 7519 §2 NumericDate wants seconds.
    static let maximumSeconds = 100_000_000_000

    /// A time claim (`exp`, `iat`, `nbf`) in whole seconds since 1970, as `integer` with numeric
    /// strings allowed.
    /// - Throws: `JWTVerificationError` `.malformed` naming the claim when it is above 10^11
    ///   (milliseconds), or as `integer`.
    func seconds(_ name: String) throws(JWTVerificationError) -> Int? {
        guard let value = try integer(name, allowString: true) else { return nil }
        guard value <= Self.maximumSeconds else {
            throw JWTVerificationError(.malformed, "\(context) \(name): \(value) is above 10^11, so milliseconds; "
                + "expected seconds since 1970")
        }
        return value
    }

    /// `aud`: one string or an array of strings (RFC 7519 §4.1.3).
    func audience() throws(JWTVerificationError) -> [String] {
        switch members["aud"] {
        case nil, .null?: return []
        case .string(let text)?: return [text]
        case .array(let items)?:
            var out: [String] = []
            for item in items {
                guard case .string(let text) = item else { throw bad("aud", "strings in the array", item) }
                out.append(text)
            }
            return out
        case let value?: throw bad("aud", "a string or an array of strings", value)
        }
    }
}
