import Clocks
import Foundation

/// Structured logger: a constant message plus dotted lower-case keys (`job.id`, `http.status`).
/// Writes JSON lines to stderr when stderr is not a terminal, readable lines when it is.
/// Never pass secrets as values: use fingerprints.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable {
        case debug = 0, info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        var name: String { ["debug", "info", "warning", "error"][rawValue] }
    }

    public let label: String
    public let minimum: Level
    private let json: Bool
    private let sink: any LogSink
    private let clock: any WallClock

    /// - Parameters:
    ///   - minimum: least severe level written. Default `.info`.
    ///   - json: JSON lines if true; `nil` picks JSON when stderr is not a TTY.
    ///   - sink: where lines go. Default standard error.
    ///   - clock: the time stamped on each line (`ts`, ISO 8601 UTC with milliseconds). Default `SystemClock()`.
    public init(label: String, minimum: Level = .info, json: Bool? = nil, sink: any LogSink = StandardErrorLogSink(),
                clock: any WallClock = SystemClock()) {
        self.label = label
        self.minimum = minimum
        self.json = json ?? (isatty(STDERR_FILENO) == 0)
        self.sink = sink
        self.clock = clock
    }

    public func debug(_ message: StaticString, _ fields: [String: String] = [:]) { log(.debug, message, fields) }
    public func info(_ message: StaticString, _ fields: [String: String] = [:]) { log(.info, message, fields) }
    public func warning(_ message: StaticString, _ fields: [String: String] = [:]) { log(.warning, message, fields) }
    public func error(_ message: StaticString, _ fields: [String: String] = [:]) { log(.error, message, fields) }

    public func log(_ level: Level, _ message: StaticString, _ fields: [String: String]) {
        guard level >= minimum else { return }
        let text = "\(message)"
        let line: String
        if json {
            var object: [String: String] = fields
            object["level"] = level.name
            object["msg"] = text
            object["logger"] = label
            object["ts"] = timestamp()
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            line = String(decoding: data, as: UTF8.self)
        } else {
            let kv = fields.sorted { $0.key < $1.key }.map { "\(Self.textValue($0.key))=\(Self.textValue($0.value))" }
                .joined(separator: " ")
            line = "\(timestamp()) \(level.name.uppercased()) [\(label)] \(text)\(kv.isEmpty ? "" : " " + kv)"
        }
        sink.write(line)
    }

    /// A text-format key or value, logfmt style: as is when it is plain, else in double quotes
    /// with `\\`, `\"`, `\n`, `\r`, `\t` and `\u{XX}` for every other control character, so a
    /// value (a request path with `%0a` decoded, a header) can never start a forged line.
    static func textValue(_ value: String) -> String {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { !isControl($0) && !" \"=\\".unicodeScalars.contains($0) }
        guard !plain else { return value }
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where isControl(scalar): out += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// C0 and C1 controls, DEL, and the Unicode line and paragraph separators.
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}"
    }

    private func timestamp() -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(clock.now)
    }
}

/// Where log lines go: standard error in production; tests pass a memory sink
/// (`TestSupport.MemoryLogSink`).
public protocol LogSink: Sendable {
    /// Writes one complete line (without its newline).
    func write(_ line: String)
}

/// Writes each line, with a newline, to standard error.
public struct StandardErrorLogSink: LogSink {
    public init() {}

    public func write(_ line: String) {
        try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
    }
}

extension LogSink where Self == StandardErrorLogSink {
    /// Standard error.
    public static var standardError: StandardErrorLogSink { StandardErrorLogSink() }
}
