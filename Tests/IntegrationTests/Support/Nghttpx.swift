import Foundation
import Testing

/// Debian's `nghttpx` (package `nghttp2-proxy`, installed by `scripts/install-deps.sh`) as an
/// HTTPS front end of a local backend, as Apple's edge is: frontend TLS with ALPN `h2` and
/// `http/1.1`, backend HTTP/1.1 to `backendURL` (plain http, or TLS trusting `backendCA`). Its
/// certificate (P-256, for 127.0.0.1 and localhost) is made with the `openssl` CLI; `certificateFile`
/// is what a client trusts. Each request is one access-log line: `ALPN STATUS METHOD PATH`.
final class Nghttpx: @unchecked Sendable {   // used from one test task at a time
    let process = Process()
    let url: String
    let certificateFile: String
    private let accessLog: String
    private let errorLog: String

    /// Starts nghttpx in `directory` and waits until it accepts TLS connections.
    /// - Throws: `TestFailure` when nghttpx or openssl is missing or the proxy does not come up.
    init(backendURL: String, backendCA: String? = nil, directory: URL) async throws {
        guard let nghttpx = Self.executable("nghttpx") else {
            throw TestFailure("nghttpx is not installed: apt-get install nghttp2-proxy (scripts/install-deps.sh does)")
        }
        let key = directory.appendingPathComponent("proxy.key").path
        certificateFile = directory.appendingPathComponent("proxy.pem").path
        accessLog = directory.appendingPathComponent("nghttpx-access.log").path
        errorLog = directory.appendingPathComponent("nghttpx-error.log").path
        try Self.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                          "-days", "1", "-subj", "/CN=siwa-tests proxy", "-addext",
                                          "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", certificateFile])
        guard let backend = URLComponents(string: backendURL), let host = backend.host, let backendPort = backend.port else {
            throw TestFailure("backend URL \(backendURL) has no host and port")
        }
        var pattern = "\(host),\(backendPort);;proto=http/1.1"
        var arguments: [String] = []
        if backend.scheme == "https" {
            pattern += ";tls;sni=localhost"   // nghttpx checks the backend's name, not an IP SAN
            arguments += backendCA.map { ["--cacert=\($0)"] } ?? ["--insecure"]
        }
        let port = try Self.freePort()
        url = "https://127.0.0.1:\(port)"
        process.executableURL = URL(fileURLWithPath: nghttpx)
        process.arguments = arguments + [
            "--conf=/dev/null", "--no-ocsp", "--single-process", "--frontend=127.0.0.1,\(port)", "--backend=\(pattern)", "--workers=1", "--accesslog-file=\(accessLog)",
            "--accesslog-format=$alpn $status $method $path", "--errorlog-file=\(errorLog)", key, certificateFile]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await Eventually.wait("nghttpx listening on \(url)", timeout: .seconds(30)) {
            guard process.isRunning else {
                throw TestFailure("nghttpx exited with \(process.terminationStatus): \(Self.read(errorLog).suffix(800))")
            }
            return Self.accepts(port: port)
        }
    }

    /// The access log so far, one entry per request: (ALPN, status, method, path).
    var requests: [(alpn: String, status: String, method: String, path: String)] {
        Self.read(accessLog).split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ").map(String.init)
            return fields.count >= 4 ? (fields[0], fields[1], fields[2], fields[3]) : nil
        }
    }

    /// Kills the proxy (SIGKILL: a test process blocks SIGTERM for its own signal handling, and
    /// children inherit the mask, so nghttpx would never see it).
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    private static func read(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    private static func executable(_ name: String) -> String? {
        ["/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"].map { "\($0)/\(name)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    private static func run(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestFailure("\(tool) \(arguments.prefix(2).joined(separator: " ")) exited with \(process.terminationStatus)")
        }
    }

    /// A port nothing listens on now (the kernel's pick for a socket bound to port 0).
    private static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw TestFailure("could not bind a port on 127.0.0.1") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// True when a TCP connection to 127.0.0.1:`port` succeeds.
    private static func accepts(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
