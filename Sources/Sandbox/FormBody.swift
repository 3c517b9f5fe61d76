/// An `application/x-www-form-urlencoded` body (WHATWG URL §5), parsed strictly as Apple does:
/// duplicate parameters, bad percent escapes, raw spaces/control/non-ASCII bytes and invalid UTF-8 are errors
/// (TN3107 lists these under `invalid_request`).
struct FormBody {
    enum Failure: Error, Equatable {
        case notPercentEncoded
        case duplicate(String)
        case badEscape
    }

    private(set) var fields: [String: String] = [:]

    subscript(_ name: String) -> String? { fields[name] }

    var names: Dictionary<String, String>.Keys { fields.keys }

    init(_ body: [UInt8]) throws(Failure) {
        if body.isEmpty { return }
        for pair in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let eq = pair.firstIndex(of: UInt8(ascii: "="))
            let name = try Self.decode(pair[pair.startIndex..<(eq ?? pair.endIndex)])
            var value = ""
            if let eq { value = try Self.decode(pair[pair.index(after: eq)...]) }
            if fields.updateValue(value, forKey: name) != nil { throw .duplicate(name) }
        }
    }

    private static func decode(_ bytes: ArraySlice<UInt8>) throws(Failure) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let c = bytes[i]
            switch c {
            case UInt8(ascii: "+"):
                out.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard i + 2 < bytes.endIndex, let hi = hex(bytes[i + 1]), let lo = hex(bytes[i + 2]) else { throw .badEscape }
                out.append(hi << 4 | lo)
                i += 2
            case 0x21...0x7E:
                out.append(c)
            default:
                throw .notPercentEncoded
            }
            i += 1
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw .badEscape }
        return text
    }

    private static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
