import Foundation
@testable import AppleID
import TestSupport

/// A tiny keep-alive HTTP/1.1 server (Python asyncio) for CurlTransport tests, bound to
/// 127.0.0.1 on a free port. The script is embedded here (SwiftPM warns about non-Swift files
/// in a test target) and written to a temp file at start. The process exits when the test
/// closes its stdin or the server object is deinitialised.
final class EchoServer: @unchecked Sendable {
    let port: Int
    private let process: Process
    private let stdin: Pipe
    private let directory: URL
    /// Asks `/seen/…` on a connection of its own.
    private let probe = CurlTransport(maxConnectionsPerHost: 1)

    init() throws {
        directory = try Shell.temporaryDirectory()
        let script = directory.appendingPathComponent("echo_server.py")
        try Data(Self.source.utf8).write(to: script)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path]
        stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        var line = [UInt8]()
        while let byte = try stdout.fileHandleForReading.read(upToCount: 1)?.first, byte != 0x0A { line.append(byte) }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw CocoaError(.fileReadCorruptFile)
        }
        self.port = port
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// How many requests for `path` the server has read in full so far, asked over its own
    /// connection (not the transport under test).
    func seen(_ path: String) async throws -> Int {
        let answer = try await probe.send(HTTPRequest(url: url("/seen" + path), timeout: .seconds(10)))
        guard answer.status == 200, let count = Int(String(decoding: answer.body, as: UTF8.self)) else {
            throw CocoaError(.fileReadCorruptFile)
        }
        return count
    }

    /// Waits (at most 30 s) until the server has read `count` requests for `path`: they are in
    /// flight from the server's side, not merely handed to the transport.
    func waitUntilSeen(_ path: String, count: Int = 1) async throws {
        try await Poll.until("the server to read \(count) request(s) for \(path)", timeout: .seconds(30)) {
            try await seen(path) >= count
        }
    }

    func stop() {
        probe.shutdown()
        try? stdin.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }

    static let source = #"""
#!/usr/bin/env python3
'''Tiny keep-alive HTTP/1.1 server for CurlTransport tests. Binds 127.0.0.1 on a free port and
prints the port on stdout. Routes:
  /echo          200; body = request body; X-Method, X-Content-Type, X-Authorization echo the request
  /status/N      status N, text/html body, Retry-After: 7
  /slow          answers after 30 s (tests cancel or time out first)
  /close         closes the connection without answering
  /big           200 with a 64 KiB body
  /connections   200; body = number of TCP connections accepted so far
  /seen/P        200; body = number of requests for /P read so far (head and body complete)
Exits when stdin closes (the test process ended).'''
import asyncio
import sys

connections = 0
seen = {}


async def handle(reader, writer):
    global connections
    connections += 1
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if not path.startswith("/seen/"):
                seen[path] = seen.get(path, 0) + 1
            status, extra, payload = 200, [], b""
            if path == "/echo":
                payload = body
                extra = [("X-Method", method), ("X-Content-Type", headers.get("content-type", "")),
                         ("X-Authorization", headers.get("authorization", ""))]
            elif path.startswith("/status/"):
                status = int(path.rsplit("/", 1)[1])
                extra = [("Content-Type", "text/html"), ("Retry-After", "7")]
                payload = b"<html><center>Apple</center></html>"
            elif path == "/slow":
                await asyncio.sleep(30)
            elif path == "/close":
                writer.close()
                return
            elif path == "/big":
                payload = b"x" * 65536
            elif path == "/connections":
                payload = str(connections).encode()
            elif path.startswith("/seen/"):
                payload = str(seen.get(path[5:], 0)).encode()
            out = [f"HTTP/1.1 {status} X", f"Content-Length: {len(payload)}"]
            out += [f"{k}: {v}" for k, v in extra]
            writer.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + payload)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
    print(server.sockets[0].getsockname()[1], flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # stop when the test closes stdin


asyncio.run(main())
"""#
}
