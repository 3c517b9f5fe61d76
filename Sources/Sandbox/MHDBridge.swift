import CMicroHTTPD

/// Per-request state carried through libmicrohttpd's `con_cls` pointer (retained; released in the
/// completion callback). Touched only by the daemon thread that owns the connection.
final class RequestContext {
    let method: String
    let path: String
    let limit: Int
    var body: [UInt8] = []
    var overflow = false
    /// The response waiting for the connection to be resumed.
    var pending: SandboxResponse?

    init(method: String, path: String) {
        self.method = method
        self.path = path
        self.limit = ServerCore.bodyLimit(path: path)
    }
}

enum MHDBridge {
    /// `MHD_AccessHandlerCallback`: called for headers, each upload chunk, the final call
    /// (`*upload_data_size == 0`), and again after a suspended connection is resumed.
    static let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadSize, conCls in
        guard let cls, let connection, let uploadSize, let conCls else { return cmhd_no() }
        let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
        guard let raw = conCls.pointee else {
            let ctx = RequestContext(method: method.map { String(cString: $0) } ?? "GET",
                                     path: url.map { String(cString: $0) } ?? "/")
            if let length = header(connection, "Content-Length").flatMap(Int.init), length > 0, length <= ctx.limit {
                ctx.body.reserveCapacity(length)
            }
            conCls.pointee = Unmanaged.passRetained(ctx).toOpaque()
            return cmhd_yes()
        }
        let ctx = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        let size = uploadSize.pointee
        if size > 0 {
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
        if let pending = ctx.pending {
            ctx.pending = nil
            return queue(pending, on: connection)
        }
        let request = SandboxRequest(method: ctx.method, path: ctx.path,
                                     contentType: header(connection, "Content-Type"),
                                     authorization: header(connection, "Authorization"),
                                     body: ctx.body,
                                     query: { name in
                                         MHD_lookup_connection_value(connection, cmhd_kind_query(), name)
                                             .map { String(cString: $0) }
                                     })
        switch core.process(request, overflow: ctx.overflow) {
        case .reset:
            return cmhd_no()
        case .respond(let response, let delayMs):
            ctx.body = []
            if delayMs > 0 {
                ctx.pending = response
                if core.suspend(connection, delayMs: delayMs) { return cmhd_yes() }
                ctx.pending = nil
            }
            return queue(response, on: connection)
        }
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

    static func queue(_ r: SandboxResponse, on connection: OpaquePointer) -> MHD_Result {
        let response = r.body.withUnsafeBytes { cmhd_response_copy($0.baseAddress, $0.count) }
        guard let response else { return cmhd_no() }
        defer { MHD_destroy_response(response) }
        if let type = r.contentType { MHD_add_response_header(response, "Content-Type", type) }
        if r.noStore {
            MHD_add_response_header(response, "Cache-Control", "no-store")
            MHD_add_response_header(response, "Pragma", "no-cache")
        }
        for (name, value) in r.headers { MHD_add_response_header(response, name, value) }
        return MHD_queue_response(connection, UInt32(r.status), response)
    }
}
