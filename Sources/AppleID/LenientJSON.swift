import Foundation

/// Tolerant readers for values decoded by JSONSerialization, for fields Apple has sent in more
/// than one shape (apple-api.md §0 #4, §2.5).
enum LenientJSON {
    /// An integer from a JSON integer, an integral float, or a numeric string ("300").
    static func int(_ value: Any?) -> Int? {
        switch value {
        case let string as String:
            return Int(string.trimmingCharacters(in: .whitespaces))
        case let number as NSNumber:
            if isBool(number) { return nil }
            let double = number.doubleValue
            guard double.isFinite, double == double.rounded(), abs(double) < 1e15 else { return nil }
            return Int(double)
        default:
            return nil
        }
    }

    /// A Bool from a JSON bool, "true"/"false" (any case), or the numbers 0/1.
    static func bool(_ value: Any?) -> Bool? {
        switch value {
        case let string as String:
            switch string.lowercased() {
            case "true", "1": return true
            case "false", "0": return false
            default: return nil
            }
        case let number as NSNumber:
            if isBool(number) { return number.boolValue }
            switch number.intValue {
            case 0: return false
            case 1: return true
            default: return nil
            }
        default:
            return nil
        }
    }

    static func nonEmptyString(_ value: Any?) -> String? {
        guard let string = value as? String, !string.isEmpty else { return nil }
        return string
    }

    /// JSONSerialization returns booleans as NSNumber with ObjC type "c" (integers are "i"/"q").
    private static func isBool(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }
}
