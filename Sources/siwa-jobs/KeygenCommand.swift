import Commands
import Foundation
import SIWACore
import SIWACrypto

/// `siwa-jobs keygen --out FILE` writes a new P-256 PKCS#8 key (a `.p8` stand-in for the sandbox
/// and demos; production keys come from the Apple developer portal). `keygen --token-key` prints
/// (or, with `--out`, writes) a new 32-byte token encryption key as hex.
enum KeygenCommand: Command {
    static let out = Declare.option("out", "FILE", .filePath, help: "where to write the key (mode 0600); required for a .p8 key")
    static let tokenKey = Declare.switch("token-key", help: "make a 32-byte token encryption key (hex) instead of a .p8 key")
    static let force = Declare.switch("force", help: "replace an existing file")

    static let spec = CommandSpec(
        "keygen", abstract: "generate a P-256 .p8 key (sandbox/demo) or a token encryption key",
        discussion: "keygen --out FILE writes a .p8 key and prints its public key; keygen --token-key [--out FILE] "
            + "makes a key for SIWA_TOKEN_KEY / SIWA_TOKEN_KEY_FILE. Files are created readable by their owner only.",
        options: [out, tokenKey, force])

    static var usesDatabase: Bool { false }
    static var checksLogging: Bool { false }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let overwrite = arguments[force]
        if arguments[tokenKey] {
            let key = Hex.encode(SecureRandom.bytes(32))
            guard let path = arguments[out] else {
                say(key)
                return .success
            }
            try SecretFile.write(Array((key + "\n").utf8), to: path, overwrite: overwrite, in: arguments)
            say("wrote \(PrintableText.quotedPath(path)) (32-byte token encryption key, hex; use as SIWA_TOKEN_KEY_FILE)")
            return .success
        }
        guard let path = arguments[out] else { throw arguments.usageError("keygen: --out FILE or --token-key is required") }
        let key = try P256PrivateKey.generate()
        try SecretFile.write(Array(key.pkcs8PEM.utf8), to: path, overwrite: overwrite, in: arguments)
        say("wrote \(PrintableText.quotedPath(path)) (P-256, PKCS#8); public key:")
        say(key.publicKey.spkiPEM)
        return .success
    }
}

/// Writes key material readable by its owner only from the first byte: a new file is created
/// with O_EXCL and mode 0600; with `overwrite`, a 0600 temporary file beside it is renamed over it.
enum SecretFile {
    /// - Throws: `UsageError` for a directory, or an existing file without `overwrite`;
    ///   `ConfigurationError` when the file cannot be created, written or replaced.
    static func write(_ bytes: [UInt8], to path: String, overwrite: Bool, in arguments: ParsedArguments) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard !isDirectory.boolValue else { throw arguments.usageError("keygen: \(PrintableText.quotedPath(path)) is a directory") }
            guard overwrite else { throw arguments.usageError("keygen: \(PrintableText.quotedPath(path)) exists; pass --force to overwrite") }
        }
        let target = overwrite ? path + ".tmp-\(getpid())" : path
        let fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            throw ConfigurationError("keygen: cannot create '\(target)': \(String(cString: strerror(errno)))")
        }
        let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        let closed = close(fd)
        guard written == bytes.count, closed == 0 else {
            unlink(target)
            throw ConfigurationError("keygen: cannot write '\(target)'")
        }
        if overwrite, rename(target, path) != 0 {
            unlink(target)
            throw ConfigurationError("keygen: cannot replace \(PrintableText.quotedPath(path)): \(String(cString: strerror(errno)))")
        }
    }
}
