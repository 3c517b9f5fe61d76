import AppleID
import Foundation
import SIWACrypto
import Testing
@testable import Sandbox

/// `sandbox --tls` over real HTTPS with libcurl (issue #12): its throwaway CA is trusted through
/// the CA file beside the system store, and each refused certificate is a `.certificate`
/// transport failure naming its cause.
@Suite(.serialized, .timeLimit(.minutes(2))) struct SandboxTLSTests {
    private func started(_ tls: SandboxTLS = SandboxTLS()) throws -> SandboxServer {
        var configuration = SandboxConfiguration()
        configuration.tls = tls
        let server = SandboxServer(configuration: configuration, model: SandboxModel(), signer: try SandboxFixture.sharedSigner.get())
        try server.start()
        return server
    }

    /// GET /auth/keys through `transport`: the status, or the transport error.
    private func keys(_ server: SandboxServer, _ transport: CurlTransport) async -> Result<Int, TransportError> {
        defer { transport.shutdown() }
        do throws(TransportError) {
            return .success(try await transport.send(HTTPRequest(url: server.baseURL + "/auth/keys", timeout: .seconds(10))).status)
        } catch {
            return .failure(error)
        }
    }

    private func refusal(_ result: Result<Int, TransportError>) -> TransportError? {
        if case .failure(let error) = result, error.kind == .certificate { return error }
        return nil
    }

    @Test func servesHTTPSThatItsCAFileMakesTrusted() async throws {
        let server = try started()
        defer { server.stop() }
        #expect(server.baseURL == "https://127.0.0.1:\(server.port)")
        let caFile = try #require(server.caFile)
        let attributes = try FileManager.default.attributesOfItem(atPath: caFile)
        #expect((attributes[.posixPermissions] as? Int) == 0o644)
        #expect(try String(contentsOfFile: caFile, encoding: .utf8).hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(try await keys(server, CurlTransport(maxConnectionsPerHost: 1, caBundlePath: caFile)).get() == 200)
    }

    @Test func withoutItsCAFileTheCertificateIsNotTrusted() async throws {
        let server = try started()
        defer { server.stop() }
        let error = try #require(refusal(await keys(server, CurlTransport(maxConnectionsPerHost: 1))))
        #expect(error.message.contains("is not trusted: it does not chain to a trusted CA"), "\(error)")
        // Another sandbox's CA does not help either.
        let other = try started()
        defer { other.stop() }
        let crossed = try #require(refusal(await keys(server, CurlTransport(maxConnectionsPerHost: 1, caBundlePath: other.caFile))))
        #expect(crossed.message.contains("is not trusted"), "\(crossed)")
    }

    @Test func aCertificateForAnotherNameIsTheWrongHost() async throws {
        let server = try started(SandboxTLS(serverName: "appleid.example.test"))
        defer { server.stop() }
        let error = try #require(refusal(await keys(server, CurlTransport(maxConnectionsPerHost: 1, caBundlePath: server.caFile))))
        #expect(error.message.contains("does not name the host 127.0.0.1"), "\(error)")
        #expect(error.message.contains("wrong host name"), "\(error)")
    }

    @Test func anExpiredCertificateIsRefusedAsExpired() async throws {
        let server = try started(SandboxTLS(expired: true))
        defer { server.stop() }
        let error = try #require(refusal(await keys(server, CurlTransport(maxConnectionsPerHost: 1, caBundlePath: server.caFile))))
        #expect(error.message.contains("has expired"), "\(error)")
    }

    /// The extra CA file does not replace the system store: a CA that only the "system" directory
    /// holds (a hashed directory standing in for /etc/ssl/certs) is still trusted beside it.
    @Test func theSystemDirectoryStaysTrustedBesideTheCAFile() async throws {
        let inSystem = try started()
        defer { inSystem.stop() }
        let inFile = try started()
        defer { inFile.stop() }
        let system = FileManager.default.temporaryDirectory.appendingPathComponent("system-ca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: system, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: system) }
        let empty = system.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let pem = try String(contentsOfFile: try #require(inSystem.caFile), encoding: .utf8)
        try Data(pem.utf8).write(to: system.appendingPathComponent(try ThrowawayTLSIdentity.subjectHash(ofCertificatePEM: pem) + ".0"))
        func transport(_ directory: URL) -> CurlTransport {
            CurlTransport(maxConnectionsPerHost: 1, caBundlePath: inFile.caFile, systemCAPath: directory.path)
        }
        #expect(try await keys(inFile, transport(system)).get() == 200)
        #expect(try await keys(inSystem, transport(system)).get() == 200)
        #expect(refusal(await keys(inSystem, transport(empty))) != nil, "trusted only through the system directory")
    }

    @Test func theCAFileGoesWhereItIsAsked() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tls-dir-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try started(SandboxTLS(directory: dir))
        defer { server.stop() }
        #expect(server.caFile == dir + "/ca.pem")
        #expect(FileManager.default.fileExists(atPath: dir + "/ca.pem"))
        server.stop()
        #expect(FileManager.default.fileExists(atPath: dir + "/ca.pem"), "a directory that was given is left as it is")
    }

    /// The directory the sandbox made for its CA file goes when it stops: throwaway CAs do not pile
    /// up under the temporary directory, run after run.
    @Test func theDirectoryItMadeGoesWhenItStops() throws {
        let server = try started()
        let caFile = try #require(server.caFile)
        let dir = URL(fileURLWithPath: caFile).deletingLastPathComponent().path
        #expect(dir.hasPrefix(FileManager.default.temporaryDirectory.path))
        #expect(FileManager.default.fileExists(atPath: caFile))
        server.stop()
        #expect(!FileManager.default.fileExists(atPath: dir), "\(dir) is left behind")
        server.stop()   // idempotent
    }
}
