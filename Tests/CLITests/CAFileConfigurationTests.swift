import Foundation
import SIWAJobs
import Testing

/// `SIWA_CA_FILE`: an extra CA trusted besides the system store (issue #12); a bad one is a
/// configuration error naming the variable.
@Suite struct CAFileConfigurationTests {
    private func settings(_ path: String?) -> SIWAConfiguration {
        SIWAConfiguration(environment: path.map { ["SIWA_CA_FILE": $0] } ?? [:])
    }

    private func directory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ca-file-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func unsetTrustsTheSystemStoreAlone() throws {
        #expect(try settings(nil).caFile() == nil)
        let transport = try settings(nil).httpTransport(maxConnectionsPerHost: 1)
        defer { transport.shutdown() }
        #expect(transport.trust.caInfo == nil && transport.trust.caPath == nil)
    }

    @Test func aReadableCertificateFileIsTrustedBesideTheSystemStore() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("ca.pem").path
        try Data("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".utf8).write(to: URL(fileURLWithPath: file))
        #expect(try settings(file).caFile() == file)
        let transport = try settings(file).httpTransport(maxConnectionsPerHost: 1)
        defer { transport.shutdown() }
        #expect(transport.trust.caInfo == file)
        #expect(transport.trust.caPath != nil, "the system directory stays trusted")
    }

    @Test func aMissingOrUnusableFileIsAConfigurationErrorNamingTheVariable() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let missing = dir.appendingPathComponent("nope.pem").path
        let notPEM = dir.appendingPathComponent("key.txt").path
        try Data("not a certificate".utf8).write(to: URL(fileURLWithPath: notPEM))
        #expect(configurationFailure { try settings(missing).caFile() as Any }
            == "SIWA_CA_FILE: '\(missing)' cannot be read: no such file or directory")
        #expect(configurationFailure { try settings(dir.path).caFile() as Any }
            == "SIWA_CA_FILE: '\(dir.path)' cannot be read: is a directory")
        #expect(configurationFailure { try settings(notPEM).caFile() as Any }
            == "SIWA_CA_FILE: '\(notPEM)' holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        #expect(configurationFailure { try settings(missing).httpTransport() } != nil)
    }
}
