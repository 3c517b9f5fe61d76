import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A parsed HTTP/1.1 response.
public struct HTTPReply: Sendable {
    public var status: Int
    /// By lower-case name.
    public var headers: [String: String]
    public var body: [UInt8]
    public var text: String { String(decoding: body, as: UTF8.self) }
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

public enum RawHTTPError: Error, Equatable {
    case connect(Int32)
    /// The server closed the connection without sending a single byte.
    case closedWithoutResponse
    case malformed(String)
    case timeout
}

/// A tiny blocking HTTP/1.1 client over a POSIX socket (`Connection: close`), so tests can see
/// exactly what a server sends, including a connection closed with no response.
public enum RawHTTP {
    /// One request on a fresh connection to 127.0.0.1:`port`; blocks the calling thread until the
    /// server closes the connection (or `timeoutSeconds` pass without a byte).
    /// - Parameter host: the `Host` header (default `127.0.0.1:PORT`).
    /// - Throws: `RawHTTPError`.
    public static func request(port: UInt16, method: String, path: String, headers: [(String, String)] = [],
                        body: [UInt8] = [], host: String? = nil, timeoutSeconds: Int = 10) throws -> HTTPReply {
        let fd = try connectedSocket(port: port)
        defer { close(fd) }
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host ?? "127.0.0.1:\(port)")\r\nConnection: close\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        let out = Array(head.utf8) + body
        var sent = 0
        while sent < out.count {
            let n = out[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }  // the server may close early (reset fault); reading tells the story
            sent += n
        }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { data += buffer[0..<n]; continue }
            if n == 0 { break }
            if errno == EAGAIN || errno == EWOULDBLOCK { throw RawHTTPError.timeout }
            if errno == ECONNRESET { break }
            throw RawHTTPError.malformed("recv errno \(errno)")
        }
        if data.isEmpty { throw RawHTTPError.closedWithoutResponse }
        return try parse(data)
    }

    /// A TCP socket connected to 127.0.0.1:`port`; the caller closes it.
    /// - Throws: `RawHTTPError.connect` with the errno.
    public static func connectedSocket(port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError.connect(errno) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let error = errno
            close(fd)
            throw RawHTTPError.connect(error)
        }
        return fd
    }

    static func parse(_ data: [UInt8]) throws -> HTTPReply {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0...(max(0, data.count - 4))).first(where: { Array(data[$0..<min($0 + 4, data.count)]) == separator }) else {
            throw RawHTTPError.malformed("no header terminator")
        }
        let lines = String(decoding: data[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw RawHTTPError.malformed(lines[0]) }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(data[(end + 4)...])
        if let length = headers["content-length"].flatMap(Int.init), length < body.count { body = Array(body[0..<length]) }
        return HTTPReply(status: status, headers: headers, body: body)
    }

    /// Percent-encodes form fields (RFC 3986 unreserved characters pass through).
    public static func form(_ fields: [(String, String)]) -> [UInt8] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let text = fields.map { k, v in
            (k.addingPercentEncoding(withAllowedCharacters: allowed) ?? k) + "="
                + (v.addingPercentEncoding(withAllowedCharacters: allowed) ?? v)
        }.joined(separator: "&")
        return Array(text.utf8)
    }

    /// `request` on a thread of its own, so async tests never block a thread of the Swift
    /// concurrency pool (which the server under test may need) nor queue behind other blocked
    /// requests in libdispatch's small global pool.
    public static func send(port: UInt16, method: String, path: String, headers: [(String, String)] = [],
                            body: [UInt8] = [], timeoutSeconds: Int = 10) async throws -> HTTPReply {
        let headerList = headers.map { HTTPHeaderPair(name: $0.0, value: $0.1) }
        return try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result {
                    try request(port: port, method: method, path: path, headers: headerList.map { ($0.name, $0.value) },
                                body: body, timeoutSeconds: timeoutSeconds)
                })
            }
            thread.start()
        }
    }
}

/// A header as a Sendable pair (tuples cross into `@Sendable` closures only as values).
private struct HTTPHeaderPair: Sendable {
    let name: String
    let value: String
}
