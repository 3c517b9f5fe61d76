import CCurl
import Foundation
import Testing
@testable import AppleID

/// Which CAs the transport trusts, and what a refused certificate becomes (issue #12).
/// The same trust against real HTTPS servers: SandboxTests/SandboxTLSTests.
@Suite struct TLSTrustTests {
    @Test func withoutAnExtraCAFileLibcurlsSystemStoreIsKept() {
        let trust = TLSTrust(extraCAFile: nil)
        // No CAINFO/CAPATH override: libcurl's built-in bundle and directory, i.e. the system store.
        #expect(trust.curlOptions == ["CURLOPT_SSL_VERIFYPEER = 1", "CURLOPT_SSL_VERIFYHOST = 2"])
        #expect(CurlTransport().trust == trust)
    }

    @Test func anExtraCAFileIsTrustedBesideTheSystemDirectory() throws {
        let system = try #require(TLSTrust.systemCAPath, "libcurl names no CA directory and /etc/ssl/certs is missing")
        let trust = TLSTrust(extraCAFile: "/tmp/extra-ca.pem")
        #expect(trust.curlOptions == ["CURLOPT_SSL_VERIFYPEER = 1", "CURLOPT_SSL_VERIFYHOST = 2",
                                      "CURLOPT_CAINFO = /tmp/extra-ca.pem", "CURLOPT_CAPATH = \(system)"])
        // The directory is a hashed store OpenSSL can look CAs up in (c_rehash: HASH.0 links).
        let hashed = try FileManager.default.contentsOfDirectory(atPath: system).filter { $0.hasSuffix(".0") }
        #expect(hashed.count > 10, "\(system) holds \(hashed.count) hashed CA certificates")
        #expect(CurlTransport(caBundlePath: "/tmp/extra-ca.pem").trust == trust)
    }

    @Test func libcurlsBuiltInDirectoryIsTheOneKept() throws {
        let easy = try #require(curl_easy_init())
        defer { curl_easy_cleanup(easy) }
        var pointer: UnsafeMutableRawPointer?
        #expect(ccurl_easy_getinfo_ptr(easy, CURLINFO_CAPATH, &pointer) == CURLE_OK)
        let builtIn = pointer.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
        #expect(TLSTrust.systemCAPath == builtIn ?? "/etc/ssl/certs")
    }

    @Test(arguments: [CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_SSL_ISSUER_ERROR,
                      CURLE_SSL_CRL_BADFILE, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS])
    func certificateCodesAreCertificateFailures(_ code: CURLcode) {
        #expect(CurlEngine.kind(of: code) == .certificate)
    }

    @Test func aTLSHandshakeThatBrokeIsStillAFailedConnection() {
        #expect(CurlEngine.kind(of: CURLE_SSL_CONNECT_ERROR) == .connectionFailed)
    }

    @Test func aRefusedCertificateIsAConfigurationErrorThatNeverReachedTheServer() {
        let error = AppleIDError.transport(TransportError(kind: .certificate, message: "the server's certificate has expired"))
        #expect(error.errorClass == .configuration)
        #expect(error.isCertificateFailure)
        #expect(!error.isRetryable)
        #expect(!error.neverReachedApple)   // not "Apple down": a drain must not wait it out
        #expect(error.description.contains("has expired"))
    }
}
