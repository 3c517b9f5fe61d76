import CMicroHTTPD
import Synchronization

/// Per-request state carried through libmicrohttpd's `con_cls` pointer (retained; released in the
/// completion callback). `body` and the flags are touched only by the loop thread that owns the
/// connection; `ready` is written by the handler's task or before a delay.
final class RequestContext: @unchecked Sendable {
    let method: String
    let path: String
    let limit: Int
    var body: [UInt8] = []
    var received = 0
    /// The body is over `limit`: refused unread (announced) and never buffered.
    var overflow = false
    /// `Content-Length` as read with the header fields (nil: absent or not a number).
    var announced: Int?
    var dispatched = false
    /// What to send once the suspended connection is resumed.
    let ready = Mutex<HTTPServerResult?>(nil)

    init(method: String, path: String, limit: Int) {
        self.method = method
        self.path = path
        self.limit = limit
    }
}

/// libmicrohttpd's C callbacks. The access handler's `cls` is the daemon's `ServerLoop`, the
/// completion callback's the `HTTPServerCore`, both unretained: the server keeps them alive until
/// `MHD_stop_daemon` has returned.
enum MHDBridge {
    /// `MHD_AccessHandlerCallback`: called for the headers, each body chunk, the final call
    /// (`*upload_data_size == 0`), and again after a suspended connection is resumed.
    static let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadSize, conCls in
        guard let cls, let connection, let uploadSize, let conCls else { return cmhd_no() }
        let loop = Unmanaged<ServerLoop>.fromOpaque(cls).takeUnretainedValue()
        let core = loop.core
        guard let raw = conCls.pointee else {
            let path = url.map { String(cString: $0) } ?? "/"
            let ctx = RequestContext(method: method.map { String(cString: $0) } ?? "GET", path: path,
                                     limit: max(0, core.bodyLimit(path)))
            conCls.pointee = Unmanaged.passRetained(ctx).toOpaque()
            let announced = announcedLength(connection)
            ctx.announced = announced
            if let announced, announced > ctx.limit {
                // Refused before a byte of the body is read: a response queued now makes
                // libmicrohttpd stop reading and close after it (an async handler's, on resume).
                ctx.overflow = true
                return dispatch(ctx, connection: connection, loop: loop, bodyBytes: announced)
            }
            if let announced, announced > 0 { ctx.body.reserveCapacity(announced) }
            return cmhd_yes()
        }
        let ctx = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        let size = uploadSize.pointee
        if size > 0 {
            ctx.received += size
            if !ctx.overflow, let uploadData {
                if ctx.body.count + size > ctx.limit {
                    // A body without Content-Length (chunked) past the limit: no answer can be
                    // queued mid-body, so the connection is closed rather than read on.
                    return cmhd_no()
                } else {
                    uploadData.withMemoryRebound(to: UInt8.self, capacity: size) {
                        ctx.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size))
                    }
                }
            }
            uploadSize.pointee = 0
            return cmhd_yes()
        }
        if ctx.dispatched { return core.resumed(ctx, connection: connection) }
        return dispatch(ctx, connection: connection, loop: loop, bodyBytes: max(ctx.announced ?? 0, ctx.received))
    }

    /// Hands the request to the handler: its body as received, or none when `ctx.overflow`.
    private static func dispatch(_ ctx: RequestContext, connection: OpaquePointer, loop: ServerLoop,
                                 bodyBytes: Int) -> MHD_Result {
        let request = HTTPServerRequest(method: ctx.method, path: ctx.path, headers: headerFields(connection),
                                        query: queryArguments(connection), body: ctx.overflow ? [] : ctx.body,
                                        bodyTooLarge: ctx.overflow, bodyBytes: bodyBytes)
        ctx.body = []
        ctx.dispatched = true
        return loop.core.respond(to: request, context: ctx, connection: connection, loop: loop)
    }

    /// `Content-Length` as a number of bytes; nil when absent or not a number (chunked bodies).
    /// Read from the C string in place (every request has one to read).
    private static func announcedLength(_ connection: OpaquePointer) -> Int? {
        let name: StaticString = "Content-Length"
        let found = name.withUTF8Buffer { name in
            name.baseAddress!.withMemoryRebound(to: CChar.self, capacity: name.count + 1) {
                MHD_lookup_connection_value(connection, cmhd_kind_header(), $0)
            }
        }
        guard let found else { return nil }
        var value = 0
        var at = found
        guard at.pointee != 0 else { return nil }
        while at.pointee != 0 {
            let digit = Int(at.pointee) - 48
            guard (0...9).contains(digit) else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(digit)
            if o1 || o2 { return nil }
            value = sum
            at += 1
        }
        return value
    }

    /// `MHD_RequestCompletedCallback`: drops the request context and counts the request finished.
    static let completedHandler: MHD_RequestCompletedCallback = { cls, _, conCls, _ in
        guard let conCls, let raw = conCls.pointee else { return }
        let ctx = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
        conCls.pointee = nil
        if ctx.dispatched, let cls { Unmanaged<HTTPServerCore>.fromOpaque(cls).takeUnretainedValue().completed() }
    }

    static func header(_ connection: OpaquePointer, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, cmhd_kind_header(), name).map { String(cString: $0) }
    }

    /// The request's header fields, in order.
    static func headerFields(_ connection: OpaquePointer) -> HTTPRequestHeaders {
        var headers = HTTPRequestHeaders()
        withUnsafeMutablePointer(to: &headers) { pointer in
            _ = MHD_get_connection_values(connection, cmhd_kind_header(), { cls, _, key, value in
                guard let cls, let key, let value else { return cmhd_yes() }
                cls.assumingMemoryBound(to: HTTPRequestHeaders.self).pointee
                    .append(HTTPHeader(String(cString: key), String(cString: value)))
                return cmhd_yes()
            }, pointer)
        }
        return headers
    }

    /// The query arguments that have a value, decoded; the first value of a repeated name wins, as
    /// `MHD_lookup_connection_value` would answer.
    static func queryArguments(_ connection: OpaquePointer) -> [String: String] {
        var arguments: [String: String] = [:]
        withUnsafeMutablePointer(to: &arguments) { pointer in
            _ = MHD_get_connection_values(connection, cmhd_kind_query(), { cls, _, key, value in
                guard let cls, let key, let value else { return cmhd_yes() }
                let arguments = cls.assumingMemoryBound(to: [String: String].self)
                let name = String(cString: key)
                if arguments.pointee[name] == nil { arguments.pointee[name] = String(cString: value) }
                return cmhd_yes()
            }, pointer)
        }
        return arguments
    }

    static func queue(_ r: HTTPServerResponse, on connection: OpaquePointer) -> MHD_Result {
        let response = r.body.withUnsafeBytes { cmhd_response_copy($0.baseAddress, $0.count) }
        guard let response else { return cmhd_no() }
        defer { MHD_destroy_response(response) }
        // withCString, not the implicit conversion: that one copies a small string to the heap.
        if let type = r.contentType { add("Content-Type", type, to: response) }
        for header in r.headers { add(header.name, header.value, to: response) }
        return MHD_queue_response(connection, UInt32(r.status), response)
    }

    private static func add(_ name: String, _ value: String, to response: OpaquePointer) {
        name.withCString { name in value.withCString { _ = MHD_add_response_header(response, name, $0) } }
    }
}
