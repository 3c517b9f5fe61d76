import Foundation

/// Reads claims leniently, the way Apple actually sends them (apple-api.md §7.2, §8.3):
/// booleans as `true`/`false` or the strings `"true"`/`"false"`, numbers as JSON numbers or
/// (for time claims) numeric strings. A claim of any other shape is `malformed`, naming it.
/// JSON `null` counts as absent.
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

    func bool(_ name: String) throws(JWTVerificationError) -> Bool? {
        switch members[name] {
        case nil, .null?: return nil
        case .bool(let flag)?: return flag
        case .string(let text)? where text.lowercased() == "true": return true
        case .string(let text)? where text.lowercased() == "false": return false
        case let value?: throw bad(name, "a boolean or \"true\"/\"false\"", value)
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
