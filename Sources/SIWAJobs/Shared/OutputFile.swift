import Foundation
import SIWACore

/// A file that appears whole or not at all (`results export --out`, `accounts export --out`, the
/// transfer hand-off file): bytes go to a private `PATH.partial-<pid>-<random>` beside it
/// (O_EXCL, mode 0600 from the first byte), which `publish()` puts in place and `discard()`
/// removes. A full disk or a failed query therefore never leaves half a file at `PATH`, nor
/// truncates the file that was there.
///
/// Publishing: with `replacing`, rename(2), which replaces a regular file atomically and refuses
/// a directory; without it, link(2), which refuses an existing `PATH`, so two runs can never
/// publish over each other. Nothing is ever deleted but the partial file.
///
/// With `replacing`, an existing `PATH` that is not a regular file (`/dev/stdout`, a FIFO, a
/// device, a symbolic link) is written directly, as a stream: it cannot be replaced atomically,
/// and renaming over it would replace the device node or the link itself.
public final class OutputFile {
    /// Why the file could not be made or published: the path and the system's reason.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let path: String
        public let reason: String
        /// errno's value, e.g. EEXIST when `PATH` exists and replacing was not asked for.
        public let code: Int32
        public var description: String { "cannot create \(PrintableText.quotedPath(path)): \(reason)" }
    }

    public let path: String
    /// Where the bytes go until `publish()`; nil when `path` is written directly (not a regular file).
    public let partial: String?
    public let handle: FileHandle
    private let replacing: Bool
    private var done = false

    /// Creates the partial file (or opens `path` itself, see above).
    /// - Throws: `Failure` when it cannot be created (a missing directory, no permission).
    public init(path: String, replacing: Bool) throws(Failure) {
        self.path = path
        self.replacing = replacing
        var existing = stat()
        if replacing, lstat(path, &existing) == 0, existing.st_mode & S_IFMT != S_IFREG {
            partial = nil
            let fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
            guard fd >= 0 else { throw Failure(path: path, reason: Self.reason(errno), code: errno) }
            handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            return
        }
        let name = path + ".partial-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        partial = name
        let fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(path: path, reason: Self.reason(errno), code: errno) }   // named as asked
        handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    deinit { if !done { discard() } }

    /// Closes the partial file and puts it at `path`.
    /// - Throws: `Failure` (for `path`) when it cannot: the disk filled on close, `path` exists
    ///   and replacing was not asked for (EEXIST), or `path` is a directory. The partial file is
    ///   removed then.
    public func publish() throws(Failure) {
        do { try handle.close() } catch {
            discard()
            throw Failure(path: path, reason: "\(error)", code: EIO)
        }
        guard let partial else { done = true; return }
        let moved = replacing ? rename(partial, path) : link(partial, path)
        let code = errno
        if moved != 0 {
            discard()
            throw Failure(path: path, reason: Self.reason(code), code: code)
        }
        if !replacing { unlink(partial) }
        done = true
    }

    /// Removes the partial file; `path` is left as it was.
    public func discard() {
        try? handle.close()
        if let partial { unlink(partial) }
        done = true
    }

    private static func reason(_ code: Int32) -> String { String(cString: strerror(code)).lowercased() }
}
