/// A response's header fields as received: one byte buffer holding each field's name and value,
/// and the fields' bounds in it. Filled by the transport one header line at a time without making
/// a String per name and value (a response carries about seven fields and the client reads one or
/// two, on errors); `HTTPResponse.headers` builds the Strings only when asked.
struct ResponseHeaders: Sendable {
    /// One field: its name and value as offsets into `bytes` (value without surrounding blanks).
    struct Field: Sendable {
        let nameStart: Int32, nameEnd: Int32, valueStart: Int32, valueEnd: Int32
    }

    private(set) var bytes: [UInt8] = []
    private(set) var fields: [Field] = []

    init() {}

    /// Header fields given as pairs (tests, `HTTPResponse.init`), in order.
    init(_ pairs: [(String, String)]) {
        for (name, value) in pairs { append(name: Array(name.utf8)[...], value: Array(value.utf8)[...]) }
    }

    var isEmpty: Bool { fields.isEmpty }

    /// Adds one raw header line as libcurl hands it over (CRLF included). A status line
    /// (`HTTP/...`) starts a fresh set (after `100 Continue` or an intermediate response). The
    /// name runs to the first colon; the value has no leading blanks and no trailing blanks or
    /// line ends (RFC 9110 §5.5). A line without a colon (the blank line ending the block) adds
    /// nothing.
    mutating func addLine(_ line: UnsafeRawBufferPointer) {
        var end = line.count
        while end > 0, line[end - 1] == 0x0D || line[end - 1] == 0x0A || line[end - 1] == 0x20 || line[end - 1] == 0x09 { end -= 1 }
        if end >= 5, line[0] == 0x48, line[1] == 0x54, line[2] == 0x54, line[3] == 0x50, line[4] == 0x2F {   // "HTTP/"
            bytes.removeAll(keepingCapacity: true)
            fields.removeAll(keepingCapacity: true)
            return
        }
        guard let colon = line[..<end].firstIndex(of: 0x3A) else { return }
        var start = colon + 1
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        append(name: line[..<colon], value: line[start..<end])
    }

    private mutating func append(name: some Collection<UInt8>, value: some Collection<UInt8>) {
        if fields.isEmpty {   // room for a whole typical response at once, not grown line by line
            bytes.reserveCapacity(256)
            fields.reserveCapacity(12)
        }
        let nameStart = bytes.count
        bytes.append(contentsOf: name)
        let valueStart = bytes.count
        bytes.append(contentsOf: value)
        fields.append(Field(nameStart: Int32(nameStart), nameEnd: Int32(valueStart), valueStart: Int32(valueStart),
                            valueEnd: Int32(bytes.count)))
    }

    /// The fields as (name, value) Strings, in arrival order.
    var pairs: [(String, String)] {
        fields.map { (text(Int($0.nameStart), Int($0.nameEnd)), text(Int($0.valueStart), Int($0.valueEnd))) }
    }

    /// The first value of the field called `name` (ASCII letters matched in either case), or nil.
    func value(of name: String) -> String? {
        let wanted = Array(name.utf8)
        for field in fields where Int(field.nameEnd - field.nameStart) == wanted.count {
            var same = true
            for offset in 0..<wanted.count where Self.folded(bytes[Int(field.nameStart) + offset]) != Self.folded(wanted[offset]) {
                same = false
                break
            }
            if same { return text(Int(field.valueStart), Int(field.valueEnd)) }
        }
        return nil
    }

    private func text(_ start: Int, _ end: Int) -> String {
        String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// An ASCII upper-case letter as lower case; any other byte as is.
    private static func folded(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }
}
