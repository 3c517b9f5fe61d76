import Foundation
import MicroHTTP
import SIWACrypto

/// How the sandbox serves HTTPS (`siwa-jobs sandbox --tls`): at start it makes a throwaway CA and
/// a server certificate (`ThrowawayTLSIdentity`), serves with the certificate, and writes the CA
/// certificate to `ca.pem` (mode 0644) in `directory`, for clients to trust (`SIWA_CA_FILE`).
/// A directory the sandbox made itself (no `directory` given) is removed when it stops; one that
/// was given is left as it is.
///
/// Two shapes exist only to test clients' certificate checks (the sandbox is a stand-in):
/// `serverName` (a certificate for another name than 127.0.0.1/localhost: the wrong host) and
/// `expired` (notAfter in the past).
public struct SandboxTLS: Sendable, Equatable {
    /// Where `ca.pem` is written; nil: a fresh directory under the temporary directory, removed
    /// when the sandbox stops.
    public var directory: String?
    /// The one DNS name the certificate is for, instead of IP 127.0.0.1 and DNS localhost.
    public var serverName: String?
    /// A certificate whose validity ended a day ago (it began two days ago).
    public var expired: Bool

    public init(directory: String? = nil, serverName: String? = nil, expired: Bool = false) {
        self.directory = directory
        self.serverName = serverName
        self.expired = expired
    }

    /// The CA file's name inside `directory`.
    public static let caFileName = "ca.pem"

    /// Makes the identity and writes the CA file.
    /// - Returns: what the HTTP server presents, the CA file's path, and the directory made for it
    ///   when none was given (nil otherwise): the caller removes it when it stops.
    /// - Throws: `SandboxStartError` when the certificates cannot be made or the file written.
    func prepare() throws(SandboxStartError) -> (credentials: HTTPServer.TLSCredentials, caFile: String, madeDirectory: String?) {
        let now = Int64(Date().timeIntervalSince1970)   // real time: clients check against their own clock
        let identity: ThrowawayTLSIdentity
        do {
            identity = try ThrowawayTLSIdentity.make(
                dnsNames: serverName.map { [$0] } ?? ["localhost"], ipAddresses: serverName == nil ? ["127.0.0.1"] : [],
                notBefore: expired ? now - 2 * 86_400 : now - 3600, notAfter: expired ? now - 86_400 : now + 30 * 86_400)
        } catch {
            throw SandboxStartError(description: "could not make the TLS certificates: \(error)")
        }
        let file: String
        do {
            let dir = directory ?? FileManager.default.temporaryDirectory
                .appendingPathComponent("siwa-sandbox-tls-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            file = URL(fileURLWithPath: dir).appendingPathComponent(Self.caFileName).path
            try Data(identity.caCertificatePEM.utf8).write(to: URL(fileURLWithPath: file), options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        } catch {
            throw SandboxStartError(description: "could not write the CA file: \(error.localizedDescription)")
        }
        return (HTTPServer.TLSCredentials(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM), file,
                directory == nil ? URL(fileURLWithPath: file).deletingLastPathComponent().path : nil)
    }
}
