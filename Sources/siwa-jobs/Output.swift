import Foundation

/// Writes a line to stdout and flushes, so pipes and tests see it at once.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Writes `siwa-jobs: <message>` to stderr.
func complain(_ message: String) {
    FileHandle.standardError.write(Data("siwa-jobs: \(message)\n".utf8))
}

/// Writes text to stdout as is (no newline), e.g. a progress line redrawn with `\r`.
func sayRaw(_ text: String) {
    FileHandle.standardOutput.write(Data(text.utf8))
}
