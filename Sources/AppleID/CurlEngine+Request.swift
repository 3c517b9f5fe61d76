import CCurl
import Clocks
import SIWACore

extension CurlEngine {
    /// Sets the options every request shares on a new easy handle, once: no signals, TCP
    /// keep-alive, the HTTP version, no redirects, the callbacks, the error buffer, loopback
    /// never proxied (`noProxy`) and the TLS trust (`TLSTrust`, verification always on). The
    /// handle keeps them across transfers (it is never reset); `configure` sets the rest.
    func prepareHandle(_ easy: UnsafeMutableRawPointer, errorBuffer: UnsafeMutablePointer<CChar>) -> CURLcode {
        let steps: [CURLcode] = [
            ccurl_easy_setopt_str(easy, CURLOPT_NOPROXY, noProxy),
            ccurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1),
            ccurl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1),
            ccurl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, policy.curlHTTPVersion),
            ccurl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0),
            ccurl_easy_setopt_writefn(easy, CURLOPT_WRITEFUNCTION, curlWriteBody),
            ccurl_easy_setopt_writefn(easy, CURLOPT_HEADERFUNCTION, curlWriteHeader),
            ccurl_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, errorBuffer),
            trust.apply(to: easy),
        ]
        return steps.first { $0 != CURLE_OK } ?? CURLE_OK
    }

    /// Applies the request's URL, method, headers, body and timeout to a prepared easy handle
    /// (`prepareHandle`), replacing whatever its last transfer set. Only `https`, or `http` to a
    /// loopback address (`Loopback`), may be fetched (`CURLOPT_PROTOCOLS_STR`; anything else is
    /// `CURLE_UNSUPPORTED_PROTOCOL` before a byte is sent).
    func configure(_ easy: UnsafeMutableRawPointer, for transfer: CurlTransfer) -> CURLcode {
        let request = transfer.request
        guard let protocols = protocolAllowed(for: request.url), let state = handles[easy] else { return CURLE_UNSUPPORTED_PROTOCOL }
        state.errorBuffer[0] = 0
        // The first failing option's code (later ones are still set; the transfer is not started).
        var failure = CURLE_OK
        func set(_ code: CURLcode) { if failure == CURLE_OK && code != CURLE_OK { failure = code } }
        if state.protocols != protocols {
            set(ccurl_easy_setopt_str(easy, CURLOPT_PROTOCOLS_STR, protocols))
            state.protocols = failure == CURLE_OK ? protocols : nil
        }
        let timeoutMS = Int(max(1, min(request.timeout.seconds, 3600)) * 1000)
        let userdata = Unmanaged.passUnretained(transfer).toOpaque()
        set(ccurl_easy_setopt_str(easy, CURLOPT_URL, request.url))
        set(ccurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeoutMS))
        set(ccurl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, min(timeoutMS, 10_000)))
        set(ccurl_easy_setopt_long(easy, CURLOPT_PIPEWAIT, servedHTTP1 ? 0 : policy.pipeWait))
        set(ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList(for: request.headers, transfer: transfer)))
        set(ccurl_easy_setopt_ptr(easy, CURLOPT_WRITEDATA, userdata))
        set(ccurl_easy_setopt_ptr(easy, CURLOPT_HEADERDATA, userdata))
        // The method, from a clean slate: HTTPGET undoes the last transfer's POST and body.
        let method = request.method == "POST" || request.method == "GET" ? request.method : request.method.uppercased()
        switch method {
        case "GET":
            set(ccurl_easy_setopt_str(easy, CURLOPT_CUSTOMREQUEST, nil))
            set(ccurl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1))
        case "POST":
            set(ccurl_easy_setopt_str(easy, CURLOPT_CUSTOMREQUEST, nil))
            set(ccurl_easy_setopt_long(easy, CURLOPT_POST, 1))
            set(request.body.withUnsafeBytes { ccurl_easy_set_body(easy, $0.baseAddress, $0.count) })
        default:
            set(ccurl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1))
            set(ccurl_easy_setopt_str(easy, CURLOPT_CUSTOMREQUEST, request.method))
            if !request.body.isEmpty {
                set(request.body.withUnsafeBytes { ccurl_easy_set_body(easy, $0.baseAddress, $0.count) })
            }
        }
        return failure
    }

    /// `allowedProtocol(for:)`, remembered for the last URL seen (the client sends to the same
    /// one or two URLs every time). Loop thread only.
    private func protocolAllowed(for url: String) -> String? {
        if let last = lastURLVerdict, last.url == url { return last.protocols }
        let protocols = Self.allowedProtocol(for: url)
        lastURLVerdict = (url, protocols)
        return protocols
    }

    /// The `CURLOPT_HTTPHEADER` list for `headers` (plus `Expect:` to skip a 100-continue round
    /// trip): a shared one kept for the engine's life when the set holds no `Authorization`
    /// header and fewer than `maxSharedHeaderLists` sets are kept; otherwise the transfer's own,
    /// freed when it ends (`transfer.headerList`), so no bearer token outlives its request.
    private func headerList(for headers: [(String, String)], transfer: CurlTransfer) -> UnsafeMutablePointer<curl_slist>? {
        if let shared = sharedHeaderLists.first(where: { $0.headers.elementsEqual(headers, by: ==) }) { return shared.list }
        var list: UnsafeMutablePointer<curl_slist>?
        for (name, value) in headers { list = curl_slist_append(list, "\(name): \(value)") }
        list = curl_slist_append(list, "Expect:")
        let carriesCredentials = headers.contains { $0.0.lowercased() == "authorization" }
        if let list, !carriesCredentials, sharedHeaderLists.count < maxSharedHeaderLists {
            sharedHeaderLists.append((headers, list))
        } else {
            transfer.headerList = list
        }
        return list
    }

    /// `"https"` for an https URL, `"http"` for plain http to a loopback address, else nil.
    static func allowedProtocol(for url: String) -> String? {
        // Byte by byte (this runs for every request): letters of the scheme in either case, "://" as is.
        if url.utf8.count > 8, zip(url.utf8, "https://".utf8).enumerated().allSatisfy({ i, pair in
            i < 5 ? (pair.0 | 0x20) == pair.1 : pair.0 == pair.1
        }) { return "https" }
        guard let (scheme, host) = Loopback.schemeAndHost(of: url), scheme == "http", Loopback.isLoopback(host: host) else {
            return nil
        }
        return "http"
    }

    /// The response of a finished transfer.
    /// - Throws: `TransportError` classified from the curl code (`kind(of:)`), or `.other` when
    ///   the body exceeded `maxResponseBytes`.
    func response(for transfer: CurlTransfer, code: CURLcode) throws(TransportError) -> HTTPResponse {
        if transfer.overflow {
            throw TransportError(kind: .other, message: "response body exceeds \(transfer.maxResponseBytes) bytes")
        }
        guard code == CURLE_OK, let easy = transfer.easy else {
            var kind = Self.kind(of: code)
            // A timeout or a broken connection before any request byte went out (a connect
            // timeout, a TLS handshake cut short) never reached the server: no connection was made.
            if kind == .timeout || kind == .connectionReset, let easy = transfer.easy {
                var sent = 0
                if ccurl_easy_getinfo_long(easy, CURLINFO_REQUEST_SIZE, &sent) == CURLE_OK, sent == 0 { kind = .connectionFailed }
            }
            if kind == .certificate, let easy = transfer.easy {
                throw TransportError(kind: .certificate, message: certificateProblem(code, easy: easy, url: transfer.request.url))
            }
            throw TransportError(kind: kind, message: Self.describe(code))
        }
        var status = 0, version = 0, connects = 0
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        counters.record(curlVersion: version, newConnections: connects)
        noteResponseVersion(version)
        return HTTPResponse(status: status, fields: transfer.headers, body: transfer.body)
    }

    static func kind(of code: CURLcode) -> TransportError.Kind {
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_SSL_CONNECT_ERROR:
            return .connectionFailed
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return .connectionReset
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_SSL_ISSUER_ERROR,
             CURLE_SSL_CRL_BADFILE, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS:
            return .certificate
        default:
            return .other
        }
    }

    /// `curl error N: text`. libcurl's static strerror text never contains URLs or bodies.
    static func describe(_ code: CURLcode) -> String {
        let text = curl_easy_strerror(code).map { String(cString: $0) } ?? "unknown"
        return "curl error \(code.rawValue): \(text)"
    }
}
