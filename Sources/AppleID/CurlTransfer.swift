import CCurl
import Synchronization

/// One in-flight request on the curl loop. Created by the caller, then handed to the loop
/// thread through the engine's locked inbox; after that only the loop thread touches its
/// mutable fields (the inbox lock orders the hand-off), so `@unchecked Sendable` is sound.
final class CurlTransfer: @unchecked Sendable {
    /// The waiting `send`. A non-throwing continuation carrying the outcome, because checked
    /// continuations can only throw `any Error`; `CurlTransport.send` rethrows it typed.
    typealias Completion = CheckedContinuation<Result<HTTPResponse, TransportError>, Never>

    let id: Int
    let request: HTTPRequest
    let maxResponseBytes: Int
    /// Set from the cancellation handler (any thread); read by the loop thread.
    let cancelled = Atomic<Bool>(false)

    var continuation: Completion?
    var easy: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    var body: [UInt8] = []
    var headers: [(String, String)] = []
    var overflow = false

    init(id: Int, request: HTTPRequest, maxResponseBytes: Int) {
        self.id = id
        self.request = request
        self.maxResponseBytes = maxResponseBytes
    }

    /// Resumes the waiting task exactly once.
    func complete(_ result: Result<HTTPResponse, TransportError>) {
        guard let continuation else { return }
        self.continuation = nil
        continuation.resume(returning: result)
    }

    /// Appends a response header line (its raw bytes, as curl hands them over, CRLF included); a
    /// new status line starts a fresh header set (after `100 Continue` or an intermediate
    /// response). Parsed as bytes: name up to the first colon, value without leading blanks and
    /// trailing blanks or line ends (RFC 9110 §5.5); only the two strings are made.
    func addHeaderLine(_ line: UnsafeRawBufferPointer) {
        var end = line.count
        while end > 0, line[end - 1] == 0x0D || line[end - 1] == 0x0A || line[end - 1] == 0x20 || line[end - 1] == 0x09 { end -= 1 }
        if end >= 5, line[0] == 0x48, line[1] == 0x54, line[2] == 0x54, line[3] == 0x50, line[4] == 0x2F {   // "HTTP/"
            headers.removeAll()
            return
        }
        guard let colon = line[..<end].firstIndex(of: 0x3A) else { return }
        var start = colon + 1
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        headers.append((String(decoding: UnsafeRawBufferPointer(rebasing: line[..<colon]), as: UTF8.self),
                        String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<end]), as: UTF8.self)))
    }
}

/// CURLOPT_WRITEFUNCTION: appends body bytes; returning less than given aborts the transfer
/// (CURLE_WRITE_ERROR) once the response exceeds `maxResponseBytes`.
func curlWriteBody(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?) -> Int {
    guard let data, let userdata else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    if transfer.body.count + length > transfer.maxResponseBytes {
        transfer.overflow = true
        return 0
    }
    transfer.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
    return length
}

/// CURLOPT_HEADERFUNCTION: one header line per call, including the status line.
func curlWriteHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?) -> Int {
    guard let data, let userdata else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    let length = size * count
    transfer.addHeaderLine(UnsafeRawBufferPointer(start: data, count: length))
    return length
}
