import Foundation

/// Writes metrics for node_exporter's textfile collector atomically: the text goes to a
/// temporary file in the same directory (`.PATH.tmp.<pid>`), which is then renamed over `path`
/// (rename(2) is atomic within a file system), so the collector never reads half a file.
public enum MetricsTextFile {
    /// - Throws: `MetricsFileError` naming the path and the system's reason.
    public static func write(_ text: String, to path: String) throws(MetricsFileError) {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).tmp.\(getpid())")
        do {
            try Data(text.utf8).write(to: temporary)
        } catch {
            throw MetricsFileError(path: path, reason: "cannot write \(temporary.path): \(Self.reason(error))")
        }
        guard rename(temporary.path, path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: temporary)
            throw MetricsFileError(path: path, reason: "cannot rename into place: \(reason)")
        }
    }

    /// The file's text, or nil when it cannot be read (first run).
    public static func read(_ path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }

    private static func reason(_ error: any Error) -> String {
        let ns = error as NSError
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return ns.localizedDescription
    }
}

/// The metrics file could not be written. `description` names the path and why.
public struct MetricsFileError: Error, CustomStringConvertible, Sendable {
    public let path: String
    public let reason: String
    public var description: String { "metrics file '\(path)': \(reason)" }
}
