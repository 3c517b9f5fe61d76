import Foundation
@testable import AppleID
import SIWACrypto

enum Fixtures {
    static let teamID = "DEF123GHIJ"
    static let keyID = "ABC123DEFG"
    static let clientID = "com.example.app"

    static func credentials(key: P256PrivateKey? = nil) throws -> AppleCredentials {
        try AppleCredentials(teamID: teamID, keyID: keyID, clientID: clientID, privateKey: key ?? P256PrivateKey.generate())
    }

    /// Decodes a JWT segment into a JSON object, without trusting SIWACrypto's decoder.
    static func jsonSegment(_ token: String, _ index: Int) -> [String: Any] {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = base64URL(String(parts[index])),
              let object = try? JSONSerialization.jsonObject(with: Data(data)) as? [String: Any] else { return [:] }
        return object
    }

    static func intClaim(_ value: Any?) -> Int {
        (value as? NSNumber)?.intValue ?? -1
    }

    static func base64URL(_ s: String) -> [UInt8]? {
        var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.count % 4 != 0 { t += "=" }
        return Data(base64Encoded: t).map { Array($0) }
    }
}

/// Runs command-line tools (openssl, python3) from tests.
enum Shell {
    struct Output { let status: Int32; let text: String }

    static func run(_ arguments: [String], in directory: URL, stdin: String? = nil) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(status: process.terminationStatus, text: String(decoding: data, as: UTF8.self))
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-apple-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The repository root (for scripts/), from this file's location.
    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    static var pythonHasCryptography: Bool {
        guard let dir = try? temporaryDirectory() else { return false }
        defer { try? FileManager.default.removeItem(at: dir) }
        return (try? run(["python3", "-c", "import cryptography"], in: dir).status) == 0
    }
}

/// DER SEQUENCE { INTEGER r, INTEGER s } from raw R‖S, written independently of SIWACrypto.
func derFromRaw(_ raw: [UInt8]) -> [UInt8] {
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
