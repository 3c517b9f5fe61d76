import Foundation
import SIWACore

// Every write tolerates a closed pipe (`enqueue ... | head -1`, a log collector gone): SIGPIPE is
// ignored (`SIWAJobsCommand.main`) and the write's EPIPE is dropped, so the command carries on and
// its exit code still says what happened.

/// Writes a line to stdout and flushes, so pipes and tests see it at once.
func say(_ line: String) {
    try? FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8))
}

/// Writes `siwa-jobs: <message>` to stderr, with every control or format character but a line
/// break and a tab escaped (`\u{1B}`, `\r`, `\u{202E}`): whatever a message quotes (a setting's
/// value, a row written by hand), no escape sequence or carriage return reaches the terminal.
func complain(_ message: String) {
    let safe = PrintableText.escaped(message, keepingLineBreaks: true)
    try? FileHandle.standardError.write(contentsOf: Data("siwa-jobs: \(safe)\n".utf8))
}

/// Writes text to stdout as is (no newline), e.g. a progress line redrawn with `\r`.
func sayRaw(_ text: String) {
    try? FileHandle.standardOutput.write(contentsOf: Data(text.utf8))
}

/// `n` and `noun`, plural unless n is 1: "1 error", "3 errors".
func counted(_ n: some BinaryInteger, _ noun: String) -> String {
    "\(n) \(noun)\(n == 1 ? "" : "s")"
}
