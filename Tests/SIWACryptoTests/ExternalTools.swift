import Foundation

/// Runs command-line tools (openssl, python3) from tests, in a fresh temp directory.
enum ExternalTools {
    struct Output { let status: Int32; let stdout: String; let stderr: String }

    static func run(_ arguments: [String], in directory: URL) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(status: process.terminationStatus,
                      stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-crypto-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Verifies a compact ES256 JWS with `openssl dgst -sha256 -verify`, converting the raw R‖S
    /// signature to DER first. Returns openssl's combined output.
    static func opensslVerifyES256(token: String, publicKeyPEM: String) throws -> String {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let raw = Base64URLForTests.decode(String(parts[2])) else { return "bad token" }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(publicKeyPEM.utf8).write(to: dir.appendingPathComponent("pub.pem"))
        try Data((parts[0] + "." + parts[1]).utf8).write(to: dir.appendingPathComponent("input"))
        try Data(DERForTests.fromRaw(raw)).write(to: dir.appendingPathComponent("sig.der"))
        let result = try run(["openssl", "dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", "input"], in: dir)
        return result.stdout + result.stderr
    }
}

/// Independent (non-SIWACrypto) helpers so the external check does not trust the code under test.
enum Base64URLForTests {
    static func decode(_ s: String) -> [UInt8]? {
        var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.count % 4 != 0 { t += "=" }
        return Data(base64Encoded: t).map { Array($0) }
    }
}

enum DERForTests {
    /// ASN.1 DER SEQUENCE { INTEGER r, INTEGER s } from raw R‖S.
    static func fromRaw(_ raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var v = Array(bytes.drop { $0 == 0 })
            if v.isEmpty { v = [0] }
            if v[0] & 0x80 != 0 { v.insert(0, at: 0) }
            return [0x02, UInt8(v.count)] + v
        }
        let half = raw.count / 2
        let body = integer(raw[..<half]) + integer(raw[half...])
        return [0x30, UInt8(body.count)] + body
    }
}
