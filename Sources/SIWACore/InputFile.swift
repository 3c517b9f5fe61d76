#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file the operator named (a `.p8` key, the teams file, a CSV, a JWKS file), opened for
/// reading with the reason when it cannot be: `no such file or directory`, `is a directory`,
/// `permission denied` (the errno text), never Foundation's `NSCocoaErrorDomain Code=256`.
/// `-` is standard input where a command accepts it (`stdin: true`).
public struct InputFile: Sendable {
    /// The path as named (`-` for standard input).
    public let path: String
    private let descriptor: Int32

    /// Opens `path` (`O_RDONLY`, `O_CLOEXEC`) and checks it is not a directory.
    /// - Parameter stdin: `-` means standard input (which is never closed).
    /// - Throws: `InputFileError` with the reason.
    public static func open(_ path: String, stdin: Bool = false) throws(InputFileError) -> InputFile {
        if stdin && path == "-" { return InputFile(path: path, descriptor: STDIN_FILENO) }
        let fd = systemOpen(path)
        guard fd >= 0 else { throw InputFileError(path: path, errno: errno) }
        var info = stat()
        if fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR {
            systemClose(fd)
            throw InputFileError(path: path, errno: EISDIR)
        }
        return InputFile(path: path, descriptor: fd)
    }

    /// The whole content of `path`.
    /// - Parameters:
    ///   - limit: refuse a file larger than this many bytes (`InputFileError.Reason.tooLarge`).
    ///   - stdin: `-` means standard input.
    /// - Throws: `InputFileError` with the reason.
    public static func read(_ path: String, limit: Int? = nil, stdin: Bool = false) throws(InputFileError) -> [UInt8] {
        let file = try open(path, stdin: stdin)
        defer { file.close() }
        var bytes: [UInt8] = []
        while true {
            let chunk = try file.read(upTo: 1 << 16)
            if chunk.isEmpty { return bytes }
            bytes += chunk
            if let limit, bytes.count > limit { throw InputFileError(path: path, reason: .tooLarge(limit: limit)) }
        }
    }

    /// Up to `count` bytes; empty at the end of the file. Retries on `EINTR`.
    /// - Throws: `InputFileError` with the reason (e.g. `EIO`).
    public func read(upTo count: Int) throws(InputFileError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max(1, count))
        while true {
            let n = buffer.withUnsafeMutableBytes { systemRead(descriptor, $0) }
            if n >= 0 { return Array(buffer.prefix(n)) }
            if errno != EINTR { throw InputFileError(path: path, errno: errno) }
        }
    }

    /// Closes the file (standard input stays open).
    public func close() {
        if descriptor != STDIN_FILENO { systemClose(descriptor) }
    }

    /// How messages name it: the path, or `standard input` for `-`.
    public var displayName: String { descriptor == STDIN_FILENO ? "standard input" : path }
}

// The system calls, at file scope where their names are not shadowed by `InputFile`'s methods.
private func systemOpen(_ path: String) -> Int32 { open(path, O_RDONLY | O_CLOEXEC) }
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int { read(fd, buffer.baseAddress, buffer.count) }
private func systemClose(_ fd: Int32) { _ = close(fd) }

/// Why an input file cannot be read; `description` is `'PATH' cannot be read: REASON`.
public struct InputFileError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Reason: Sendable, Equatable {
        case notFound, isDirectory, permissionDenied
        /// Larger than the caller's limit, in bytes.
        case tooLarge(limit: Int)
        /// Another errno, with its text.
        case other(String)
    }

    public let path: String
    public let reason: Reason
    /// What named the file (`--code-file`), put first in `description`; nil: the path alone.
    public var source: String?

    public init(path: String, reason: Reason) {
        self.path = path
        self.reason = reason
    }

    /// The same error, its description led by `source` (a flag or variable).
    public func named(by source: String) -> InputFileError {
        var copy = self
        copy.source = source
        return copy
    }

    /// The reason for `errno` `code`: its `strerror` text, lower-cased.
    public init(path: String, errno code: Int32) {
        let reason: Reason = switch code {
        case ENOENT: .notFound
        case EISDIR: .isDirectory
        case EACCES, EPERM: .permissionDenied
        default: .other(String(cString: strerror(code)).lowercased())
        }
        self.init(path: path, reason: reason)
    }

    /// `no such file or directory`, `is a directory`, `permission denied`, ...
    public var reasonText: String {
        switch reason {
        case .notFound: "no such file or directory"
        case .isDirectory: "is a directory"
        case .permissionDenied: "permission denied"
        case .tooLarge(let limit): "larger than \(limit) bytes"
        case .other(let text): text
        }
    }

    /// `'PATH' cannot be read: REASON`, the path with control characters escaped and cut at 256
    /// characters (`PrintableText`): a file name holding a newline or an escape sequence never
    /// reaches a terminal or a log raw.
    public var description: String {
        (source.map { "\($0) " } ?? "")
            + "\(PrintableText.quotedPath(path)) cannot be read: \(reasonText)"
    }
}
