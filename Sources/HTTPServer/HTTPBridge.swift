import CMicroHTTPD
import Synchronization

/// Per-request state carried through libmicrohttpd's `con_cls` pointer (retained; released in
/// the completion callback). `body` and the flags are touched only by the daemon thread that owns
/// the connection; `ready` is written by the handler task.
final class RequestContext: @unchecked Sendable {
    let method: String
    let path: String
    let limit: Int
    var body: [UInt8] = []
    var received = 0
    var overflow = false
    var dispatched = false
    let ready = Mutex<HTTPServerResponse?>(nil)

    init(method: String, path: String, limit: Int) {
        self.method = method
        self.path = path
        self.limit = limit
    }
}

enum HTTPBridge {
    static let forwardedHeaders = ["Content-Type", "Content-Length", "User-Agent", "X-Forwarded-For"]

    /// `MHD_AccessHandlerCallback`: called for the headers, each body chunk, the final call
    /// (`*upload_data_size == 0`), and again after a suspended connection is resumed.
    static let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadSize, conCls in
        guard let cls, let connection, let uploadSize, let conCls else { return cmhd_no() }
        let core = Unmanaged<HTTPServerCore>.fromOpaque(cls).takeUnretainedValue()
        guard let raw = conCls.pointee else {
            let ctx = RequestContext(method: method.map { String(cString: $0) } ?? "GET",
                                     path: url.map { String(cString: $0) } ?? "/", limit: core.bodyLimit)
            if let length = header(connection, "Content-Length").flatMap(Int.init), length > 0, length <= ctx.limit {
                ctx.body.reserveCapacity(length)
            }
            conCls.pointee = Unmanaged.passRetained(ctx).toOpaque()
            return cmhd_yes()
        }
        let ctx = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        let size = uploadSize.pointee
        if size > 0 {
            ctx.received += size
            if !ctx.overflow, let uploadData {
                if ctx.body.count + size > ctx.limit {
                    ctx.overflow = true
                    ctx.body = []
                } else {
                    uploadData.withMemoryRebound(to: UInt8.self, capacity: size) {
                        ctx.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size))
                    }
                }
            }
            uploadSize.pointee = 0
            return cmhd_yes()
        }
        if ctx.dispatched {
            // Resumed: the handler's answer, or 503 when the server resumed us to shut down.
            let response = ctx.ready.withLock { $0 } ?? .unavailable
            return queue(response, on: connection)
        }
        var headers: [String: String] = [:]
        for name in forwardedHeaders {
            if let value = header(connection, name) { headers[name.lowercased()] = value }
        }
        let announced = headers["content-length"].flatMap(Int.init) ?? 0
        let request = HTTPServerRequest(method: ctx.method, path: ctx.path, headers: headers,
                                        body: ctx.overflow ? [] : ctx.body, bodyTooLarge: ctx.overflow,
                                        bodyBytes: max(announced, ctx.received))
        ctx.body = []
        ctx.dispatched = true
        if core.dispatch(request, context: ctx, connection: connection) { return cmhd_yes() }
        return queue(.unavailable, on: connection)
    }

    /// `MHD_RequestCompletedCallback`: drops the request context.
    static let completedHandler: MHD_RequestCompletedCallback = { _, _, conCls, _ in
        guard let conCls, let raw = conCls.pointee else { return }
        Unmanaged<RequestContext>.fromOpaque(raw).release()
        conCls.pointee = nil
    }

    static func header(_ connection: OpaquePointer, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, cmhd_kind_header(), name).map { String(cString: $0) }
    }

    static func queue(_ r: HTTPServerResponse, on connection: OpaquePointer) -> MHD_Result {
        let response = r.body.withUnsafeBytes { cmhd_response_copy($0.baseAddress, $0.count) }
        guard let response else { return cmhd_no() }
        defer { MHD_destroy_response(response) }
        if let type = r.contentType { MHD_add_response_header(response, "Content-Type", type) }
        return MHD_queue_response(connection, UInt32(r.status), response)
    }
}
