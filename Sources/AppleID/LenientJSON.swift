import Foundation

/// Tolerant readers of the values `JSONObjectScanner` keeps, for fields Apple has sent in more
/// than one shape (apple-api.md §0 #4, §2.5). They accept what the earlier readers of
/// `JSONSerialization`'s values accepted.
enum LenientJSON {
    /// An integer from a JSON integer, an integral number (`3600.0`, `36e2`), or a numeric string
    /// (`"300"`, whitespace around it allowed); nil for anything else, a bool, or a magnitude of 1e15
    /// or more.
    static func int(_ value: JSONMemberValue?) -> Int? {
        switch value {
        case .string(let text)?:
            return Int(text.trimmingCharacters(in: .whitespaces))   // rare: Apple sends a number
        case .number(let text)?:
            if let integer = Int(text) { return integer.magnitude < 1_000_000_000_000_000 ? integer : nil }
            guard let double = Double(text), double.isFinite, double == double.rounded(), abs(double) < 1e15 else { return nil }
            return Int(double)
        default:
            return nil
        }
    }

    /// A Bool from a JSON bool, `"true"`/`"false"`/`"1"`/`"0"` (any case), or a number whose
    /// integer part is 0 or 1.
    static func bool(_ value: JSONMemberValue?) -> Bool? {
        switch value {
        case .bool(let flag)?:
            return flag
        case .string(let text)?:
            switch text.lowercased() {
            case "true", "1": return true
            case "false", "0": return false
            default: return nil
            }
        case .number(let text)?:
            guard let double = Double(text), double.isFinite else { return nil }
            switch double.rounded(.towardZero) {
            case 0: return false
            case 1: return true
            default: return nil
            }
        default:
            return nil
        }
    }

    /// A JSON string that is not empty.
    static func nonEmptyString(_ value: JSONMemberValue?) -> String? {
        guard case .string(let text)? = value, !text.isEmpty else { return nil }
        return text
    }

    /// A JSON string, empty or not.
    static func string(_ value: JSONMemberValue?) -> String? {
        guard case .string(let text)? = value else { return nil }
        return text
    }
}
