import CCurl
import Clocks
import SIWACore

extension CurlEngine {
    /// Applies the request's URL, method, headers, body and timeout to a (reset) easy handle.
    /// Only `https`, or `http` to a loopback address (`Loopback`), may be fetched
    /// (`CURLOPT_PROTOCOLS_STR`; anything else is `CURLE_UNSUPPORTED_PROTOCOL` before a byte is
    /// sent), and loopback traffic never goes through a proxy (`noProxy`).
    func configure(_ easy: UnsafeMutableRawPointer, for transfer: CurlTransfer) -> CURLcode {
        let request = transfer.request
        guard let protocols = Self.allowedProtocol(for: request.url) else { return CURLE_UNSUPPORTED_PROTOCOL }
        let timeoutMS = Int(max(1, min(request.timeout.seconds, 3600)) * 1000)
        let userdata = Unmanaged.passUnretained(transfer).toOpaque()
        var headerList: UnsafeMutablePointer<curl_slist>?
        for (name, value) in request.headers { headerList = curl_slist_append(headerList, "\(name): \(value)") }
        headerList = curl_slist_append(headerList, "Expect:")  // no 100-continue round trip
        transfer.headerList = headerList
        var steps: [CURLcode] = [
            ccurl_easy_setopt_str(easy, CURLOPT_URL, request.url),
            ccurl_easy_setopt_str(easy, CURLOPT_PROTOCOLS_STR, protocols),
            ccurl_easy_setopt_str(easy, CURLOPT_NOPROXY, noProxy),
            ccurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1),
            ccurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeoutMS),
            ccurl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, min(timeoutMS, 10_000)),
            ccurl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1),
            ccurl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, policy.curlHTTPVersion),
            ccurl_easy_setopt_long(easy, CURLOPT_PIPEWAIT, servedHTTP1 ? 0 : policy.pipeWait),
            ccurl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0),
            ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList),
            ccurl_easy_setopt_writefn(easy, CURLOPT_WRITEFUNCTION, curlWriteBody),
            ccurl_easy_setopt_ptr(easy, CURLOPT_WRITEDATA, userdata),
            ccurl_easy_setopt_writefn(easy, CURLOPT_HEADERFUNCTION, curlWriteHeader),
            ccurl_easy_setopt_ptr(easy, CURLOPT_HEADERDATA, userdata),
            ccurl_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, errorBuffer(for: easy)),
        ]
        steps.append(trust.apply(to: easy))
        switch request.method.uppercased() {
        case "GET":
            steps.append(ccurl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1))
        case "POST":
            steps.append(ccurl_easy_setopt_long(easy, CURLOPT_POST, 1))
            steps.append(request.body.withUnsafeBytes { ccurl_easy_set_body(easy, $0.baseAddress, $0.count) })
        default:
            steps.append(ccurl_easy_setopt_str(easy, CURLOPT_CUSTOMREQUEST, request.method))
            if !request.body.isEmpty {
                steps.append(request.body.withUnsafeBytes { ccurl_easy_set_body(easy, $0.baseAddress, $0.count) })
            }
        }
        return steps.first { $0 != CURLE_OK } ?? CURLE_OK
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
        return HTTPResponse(status: status, headers: transfer.headers, body: transfer.body)
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
