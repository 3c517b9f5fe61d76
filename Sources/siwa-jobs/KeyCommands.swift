import AppleID
import Sandbox
import Foundation
import SIWACrypto

/// `siwa-jobs keygen --out FILE` writes a new P-256 PKCS#8 key (a `.p8` stand-in for the sandbox
/// and demos; production keys come from the Apple developer portal). `keygen --token-key` prints a
/// new 32-byte token encryption key as hex.
enum KeygenCommand {
    static func run(_ words: [String]) throws -> Int32 {
        let args = try Arguments(words, valueFlags: ["out"], switchFlags: ["token-key", "force"])
        try args.noPositionals("keygen")
        if args.flag("token-key") {
            let key = Hex.encode(SecureRandom.bytes(32))
            guard let path = args.string("out") else {
                say(key)
                return 0
            }
            try SecretFile.write(Array((key + "\n").utf8), to: path, overwrite: args.flag("force"))
            say("wrote \(path) (32-byte token encryption key, hex; use as SIWA_TOKEN_KEY_FILE)")
            return 0
        }
        guard let path = args.string("out") else { throw UsageError(message: "keygen: --out FILE or --token-key is required") }
        let key = try P256PrivateKey.generate()
        try SecretFile.write(Array(key.pkcs8PEM.utf8), to: path, overwrite: args.flag("force"))
        say("wrote \(path) (P-256, PKCS#8); public key:")
        say(key.publicKey.spkiPEM)
        return 0
    }
}

/// `siwa-jobs client-secret --team-id T --key-id K --key-file F --client-id C [--lifetime-seconds S]`:
/// prints a client secret for debugging with curl. The secret is the only thing on stdout.
enum ClientSecretCommand {
    static func run(_ words: [String], settings: Settings) throws -> Int32 {
        let args = try Arguments(words, valueFlags: ["team-id", "key-id", "key-file", "client-id", "lifetime-seconds"])
        try args.noPositionals("client-secret")
        let credentials = try settings.credentials(arguments: args)
        let lifetime = try args.seconds("lifetime-seconds", in: 60...(ClientSecret.maximumLifetime - ClientSecret.issuedAtBackdate).seconds) ?? 3600
        let minted = try ClientSecret.mint(credentials: credentials, now: Date(), lifetime: .seconds(lifetime))
        say(minted.token)
        FileHandle.standardError.write(Data("client secret for \(credentials.clientID) (team \(credentials.teamID), kid \(credentials.keyID)) expires \(minted.expiresAt)\n".utf8))
        return 0
    }
}

/// `siwa-jobs sandbox [flags]`: the local stand-in for appleid.apple.com.
enum SandboxCommand {
    static func run(_ words: [String]) async -> Int32 {
        await SandboxMain.run(arguments: words)
    }
}

/// Writes key material readable by its owner only from the first byte: a new file is created
/// with O_EXCL and mode 0600; with `overwrite`, a 0600 temporary file beside it is renamed over it.
enum SecretFile {
    static func write(_ bytes: [UInt8], to path: String, overwrite: Bool) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard !isDirectory.boolValue else { throw UsageError(message: "keygen: '\(path)' is a directory") }
            guard overwrite else { throw UsageError(message: "keygen: '\(path)' exists; pass --force to overwrite") }
        }
        let target = overwrite ? path + ".tmp-\(getpid())" : path
        let fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            throw ConfigError(message: "keygen: cannot create '\(target)': \(String(cString: strerror(errno)))")
        }
        let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        let closed = close(fd)
        guard written == bytes.count, closed == 0 else {
            unlink(target)
            throw ConfigError(message: "keygen: cannot write '\(target)'")
        }
        if overwrite, rename(target, path) != 0 {
            unlink(target)
            throw ConfigError(message: "keygen: cannot replace '\(path)': \(String(cString: strerror(errno)))")
        }
    }
}
