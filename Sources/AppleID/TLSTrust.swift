import CCurl
import Foundation

/// Which certificate authorities `CurlTransport` trusts for HTTPS (libcurl over OpenSSL).
///
/// - No extra CA file: libcurl's built-in settings, i.e. the system store (on Debian
///   `CURLOPT_CAINFO` = `/etc/ssl/certs/ca-certificates.crt`, `CURLOPT_CAPATH` = `/etc/ssl/certs`).
/// - An extra CA file (a private CA, the sandbox's throwaway CA): trusted IN ADDITION to the
///   system store. `CURLOPT_CAINFO` is the file and `CURLOPT_CAPATH` the system's hashed
///   certificate directory (OpenSSL `c_rehash` layout), which OpenSSL consults as well
///   (`SSL_CTX_load_verify_locations(cafile, capath)`).
///
/// Peer verification (`CURLOPT_SSL_VERIFYPEER` = 1) and host name verification
/// (`CURLOPT_SSL_VERIFYHOST` = 2, RFC 6125 against the certificate's subjectAltName) are always
/// on: there is no setting that turns them off.
public struct TLSTrust: Sendable, Equatable {
    /// `CURLOPT_CAINFO`: a PEM bundle; nil keeps libcurl's built-in one.
    public let caInfo: String?
    /// `CURLOPT_CAPATH`: a hashed certificate directory; nil keeps libcurl's built-in one.
    public let caPath: String?

    /// - Parameters:
    ///   - extraCAFile: a PEM file of CA certificates to trust besides the system store, or nil.
    ///   - systemCAPath: the system's hashed CA directory; default `systemCAPath` (tests pass a
    ///     directory of their own to prove the store is still consulted).
    public init(extraCAFile: String?, systemCAPath: String? = TLSTrust.systemCAPath) {
        self.caInfo = extraCAFile
        self.caPath = extraCAFile == nil ? nil : systemCAPath
        self.options = Self.settings(caInfo: caInfo, caPath: caPath)
    }

    /// libcurl's built-in CA directory (`CURLINFO_CAPATH`, libcurl ≥ 7.84; `/etc/ssl/certs` on
    /// Debian), else `/etc/ssl/certs` when it exists, else nil.
    public static let systemCAPath: String? = {
        if let easy = curl_easy_init() {
            defer { curl_easy_cleanup(easy) }
            var pointer: UnsafeMutableRawPointer?
            if ccurl_easy_getinfo_ptr(easy, CURLINFO_CAPATH, &pointer) == CURLE_OK, let pointer {
                let path = String(cString: pointer.assumingMemoryBound(to: CChar.self))
                if !path.isEmpty { return path }
            }
        }
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: "/etc/ssl/certs", isDirectory: &isDirectory) && isDirectory.boolValue
            ? "/etc/ssl/certs" : nil
    }()

    /// The easy-handle options this trust sets, in order: verification always, then the CA
    /// locations it overrides. Computed once; `apply(to:)` sets them on every request.
    let options: [Setting]

    /// One easy-handle option: its libcurl name (for tests and docs), the option, its value.
    struct Setting {
        let name: String
        let option: CURLoption
        let number: Int
        let text: String?
    }

    /// The options as `CURLOPT_… = value`, in the order they are set (what a test can check).
    public var curlOptions: [String] {
        options.map { "\($0.name) = \($0.text ?? String($0.number))" }
    }

    public static func == (a: TLSTrust, b: TLSTrust) -> Bool { a.caInfo == b.caInfo && a.caPath == b.caPath }

    static func settings(caInfo: String?, caPath: String?) -> [Setting] {
        var options = [Setting(name: "CURLOPT_SSL_VERIFYPEER", option: CURLOPT_SSL_VERIFYPEER, number: 1, text: nil),
                       Setting(name: "CURLOPT_SSL_VERIFYHOST", option: CURLOPT_SSL_VERIFYHOST, number: 2, text: nil)]
        if let caInfo { options.append(Setting(name: "CURLOPT_CAINFO", option: CURLOPT_CAINFO, number: 0, text: caInfo)) }
        if let caPath { options.append(Setting(name: "CURLOPT_CAPATH", option: CURLOPT_CAPATH, number: 0, text: caPath)) }
        return options
    }

    /// Applies `options` to an easy handle; the first failing code, or `CURLE_OK`.
    func apply(to easy: UnsafeMutableRawPointer) -> CURLcode {
        for setting in options {
            let code = if let text = setting.text {
                ccurl_easy_setopt_str(easy, setting.option, text)
            } else {
                ccurl_easy_setopt_long(easy, setting.option, setting.number)
            }
            if code != CURLE_OK { return code }
        }
        return CURLE_OK
    }
}
