import CCurl
import Synchronization

/// One in-flight request on the curl loop. Created by the caller, then handed to the loop
/// thread through the engine's locked inbox; after that only the loop thread touches its
/// mutable fields (the inbox lock orders the hand-off), so `@unchecked Sendable` is sound.
final class CurlTransfer: @unchecked Sendable {
    /// The waiting `send`. A non-throwing continuation carrying the outcome (`CurlTransport.send`
    /// rethrows it typed). Unchecked: `complete` resumes it exactly once (it clears it first), so
    /// the checked form's extra allocation and bookkeeping per request buy nothing.
    typealias Completion = UnsafeContinuation<Result<HTTPResponse, TransportError>, Never>

    let id: Int
    let request: HTTPRequest
    let maxResponseBytes: Int
    /// Set from the cancellation handler (any thread); read by the loop thread.
    let cancelled = Atomic<Bool>(false)

    var continuation: Completion?
    var easy: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    var body: [UInt8] = []
    /// The response's header fields, as libcurl hands over each line (`ResponseHeaders.addLine`).
    var headers = ResponseHeaders()
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
    transfer.headers.addLine(UnsafeRawBufferPointer(start: data, count: length))
    return length
}
