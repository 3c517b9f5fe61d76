import Foundation
import SIWACore
import Synchronization

/// What parsing a hand-off file found: rows accepted, line-numbered errors (the first
/// `maxMessages` kept), notes (byte-order mark skipped, CRLF line endings) and bytes read.
final class CSVDiagnostics: Sendable {
    static let maxMessages = 100
    /// Line numbers listed in one message (e.g. a duplicated value); the rest are counted.
    static let maxLinesPerMessage = 20

    struct State {
        var rows = 0
        var errorCount = 0
        var messages: [String] = []
        var notes: [String] = []
        var bytes: Int64 = 0
    }

    let state = Mutex(State())

    func error(_ message: String) {
        state.withLock { s in
            s.errorCount += 1
            if s.messages.count < Self.maxMessages { s.messages.append(message) }
        }
    }

    var snapshot: State { state.withLock { $0 } }
}

/// The hand-off file as COPY input, read and parsed 1 MiB at a time so a file of any size is
/// streamed, never held in memory. Valid rows become CSV lines `line_no,external_user_id,transfer_sub`;
/// once any error is seen no more rows are produced (the load will be rolled back) but parsing
/// continues so every bad line is reported. The caller opens (and closes) the file, so a file
/// that cannot be opened is refused with its reason before any transaction starts.
struct CSVCopyStream: Sequence, Sendable {
    let input: InputFile
    let diagnostics: CSVDiagnostics
    var chunkSize = 1 << 20

    func makeIterator() -> Iterator {
        Iterator(input: input, diagnostics: diagnostics, chunkSize: chunkSize)
    }

    struct Iterator: IteratorProtocol {
        let input: InputFile
        let diagnostics: CSVDiagnostics
        let chunkSize: Int
        var parser = TransferCSVParser()
        var finished = false
        var out: [UInt8] = []

        init(input: InputFile, diagnostics: CSVDiagnostics, chunkSize: Int) {
            self.input = input
            self.diagnostics = diagnostics
            self.chunkSize = chunkSize
        }

        mutating func next() -> [UInt8]? {
            while !finished {
                let data: [UInt8]
                do {
                    data = try input.read(upTo: chunkSize)
                } catch {
                    diagnostics.error("reading \(input.displayName) failed: \(error.reasonText)")
                    finished = true
                    break
                }
                diagnostics.state.withLock { $0.bytes += Int64(data.count) }
                if data.isEmpty {
                    finished = true
                    var events: [TransferCSVParser.Event] = []
                    parser.finish { events.append($0) }
                    events.forEach { handle($0) }
                    var notes: [String] = []
                    if parser.sawByteOrderMark { notes.append("line 1: a UTF-8 byte-order mark at the start was skipped") }
                    if let line = parser.firstCRLFLine {
                        notes.append("line \(line): CRLF line endings (Windows) were accepted (the first one ends this line)")
                    }
                    diagnostics.state.withLock { $0.notes = notes }
                } else {
                    var events: [TransferCSVParser.Event] = []
                    parser.feed(data) { events.append($0) }
                    events.forEach { handle($0) }
                }
                if out.count >= chunkSize / 2 || (finished && !out.isEmpty) {
                    defer { out.removeAll(keepingCapacity: true) }
                    return out
                }
            }
            return nil
        }

        private mutating func handle(_ event: TransferCSVParser.Event) {
            switch event {
            case let .error(line, message):
                diagnostics.error("line \(line): \(message)")
            case let .row(line, user, sub):
                let accept = diagnostics.state.withLock { s -> Bool in
                    guard s.errorCount == 0 else { return false }
                    s.rows += 1
                    return true
                }
                guard accept else { return }
                out += Array(String(line).utf8)
                out.append(0x2C)
                Self.appendQuoted(user, to: &out)
                out.append(0x2C)
                Self.appendQuoted(sub, to: &out)
                out.append(0x0A)
            }
        }

        /// A CSV field for COPY: always quoted, quotes doubled.
        static func appendQuoted(_ s: String, to out: inout [UInt8]) {
            out.append(0x22)
            for b in s.utf8 {
                if b == 0x22 { out.append(0x22) }
                out.append(b)
            }
            out.append(0x22)
        }
    }
}
