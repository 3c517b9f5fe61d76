import COpenSSL
import Foundation

/// One decoded PEM block (RFC 7468): its label (e.g. `PRIVATE KEY`) and DER body.
struct PEMBlock {
    let label: String
    let der: [UInt8]

    /// The block re-encoded canonically: 64-character lines, LF endings.
    var canonical: String { PEM.encode(label: label, der: der) }
}

/// Tolerant PEM reader for keys that went through env vars, JSON, YAML or copy-paste.
enum PEM {
    private static let dashes = "-----"

    /// Accepts: surrounding whitespace and quotes; CRLF or CR line endings; literal two-character
    /// `\n` / `\r` sequences (as left by env vars and JSON strings); the base64 body wrapped at
    /// any width or on a single line; BEGIN/END markers on the same line as the body.
    /// - Throws: `pem.not_pem` (no BEGIN/END markers), `pem.encrypted` (Proc-Type ENCRYPTED header),
    ///   `pem.base64` (body is not valid base64), `pem.label_mismatch` (BEGIN and END differ).
    static func parse(_ input: String) throws(CryptoError) -> PEMBlock {
        let text = normalize(input)
        guard let begin = text.range(of: dashes + "BEGIN ") else {
            throw CryptoError(code: "pem.not_pem", message: "no '-----BEGIN' marker found; expected a PEM key")
        }
        guard let labelEnd = text[begin.upperBound...].range(of: dashes) else {
            throw CryptoError(code: "pem.not_pem", message: "BEGIN marker is not terminated by '-----'")
        }
        let label = String(text[begin.upperBound..<labelEnd.lowerBound]).trimmed
        let afterBegin = text[labelEnd.upperBound...]
        guard let end = afterBegin.range(of: dashes + "END ") else {
            throw CryptoError(code: "pem.not_pem", message: "no '-----END' marker found after the BEGIN marker")
        }
        let endLabel = afterBegin[end.upperBound...].prefix { $0 != "-" }
        guard String(endLabel).trimmed == label else {
            throw CryptoError(code: "pem.label_mismatch", message: "BEGIN label '\(label)' does not match END label")
        }
        var base64 = ""
        for line in afterBegin[..<end.lowerBound].split(separator: "\n") {
            if line.contains(":") {
                if line.uppercased().contains("ENCRYPTED") {
                    throw CryptoError(code: "pem.encrypted", message: "the key is encrypted with a passphrase; supply an unencrypted key")
                }
                continue  // RFC 1421 headers such as DEK-Info
            }
            base64 += line.filter { !$0.isWhitespace }
        }
        guard !base64.isEmpty, let der = Base64.decode(base64.utf8, table: Base64.standardTable), !der.isEmpty else {
            throw CryptoError(code: "pem.base64", message: "the PEM body is not valid base64")
        }
        return PEMBlock(label: label, der: der)
    }

    /// Encodes DER as PEM with 64-character lines and a trailing newline.
    static func encode(label: String, der: [UInt8]) -> String {
        let body = Base64.encode(der, alphabet: Base64.standardAlphabet, pad: true)
        var out = dashes + "BEGIN " + label + dashes + "\n"
        var index = body.startIndex
        while index < body.endIndex {
            let next = body.index(index, offsetBy: 64, limitedBy: body.endIndex) ?? body.endIndex
            out += body[index..<next] + "\n"
            index = next
        }
        return out + dashes + "END " + label + dashes + "\n"
    }

    private static func normalize(_ input: String) -> String {
        var text = input.trimmed
        while text.count >= 2, let first = text.first, first == "\"" || first == "'", text.last == first {
            text = String(text.dropFirst().dropLast()).trimmed
        }
        text = text.replacingAll("\\r\\n", with: "\n")
            .replacingAll("\\n", with: "\n")
            .replacingAll("\\r", with: "\n")
        // Swift treats "\r\n" as one Character; rebuild from scalars to split it.
        var scalars = String.UnicodeScalarView()
        var previousCR = false
        for scalar in text.unicodeScalars {
            if scalar == "\r" { scalars.append("\n"); previousCR = true; continue }
            if scalar == "\n" && previousCR { previousCR = false; continue }
            previousCR = false
            scalars.append(scalar)
        }
        return String(scalars)
    }
}

/// What a PEM label says about the key inside.
enum PEMKind {
    case pkcs8, sec1EC, pkcs1RSA, encryptedPKCS8, publicKey, other

    init(label: String) {
        switch label {
        case "PRIVATE KEY": self = .pkcs8
        case "EC PRIVATE KEY": self = .sec1EC
        case "RSA PRIVATE KEY": self = .pkcs1RSA
        case "ENCRYPTED PRIVATE KEY": self = .encryptedPKCS8
        case "PUBLIC KEY", "RSA PUBLIC KEY": self = .publicKey
        default: self = .other
        }
    }
}

extension PEMBlock {
    /// Loads this block as a private key through OpenSSL (PKCS#8, SEC1 or PKCS#1).
    func loadPrivateKey() throws(CryptoError) -> OpaquePointer {
        switch PEMKind(label: label) {
        case .encryptedPKCS8:
            throw CryptoError(code: "pem.encrypted", message: "the key is an encrypted PKCS#8 key; supply an unencrypted key")
        case .publicKey:
            throw CryptoError(code: "key.not_private", message: "this PEM holds a public key; a private key is required")
        case .other:
            throw CryptoError(code: "pem.unexpected_label", message: "PEM label '\(label)' is not a private key")
        case .pkcs8, .sec1EC, .pkcs1RSA:
            OpenSSL.clearErrors()
            let pkey = OpenSSL.withReadBIO(Array(canonical.utf8)) { copenssl_read_private_key_pem($0) }
            guard let pkey else {
                throw OpenSSL.failure("key.invalid", "the PEM body decodes but is not a readable private key")
            }
            return pkey
        }
    }

    /// Loads this block as an SPKI public key.
    func loadPublicKey() throws(CryptoError) -> OpaquePointer {
        guard label == "PUBLIC KEY" else {
            throw CryptoError(code: "pem.unexpected_label", message: "PEM label '\(label)' is not 'PUBLIC KEY' (SPKI)")
        }
        OpenSSL.clearErrors()
        let pkey = OpenSSL.withReadBIO(Array(canonical.utf8)) { copenssl_read_public_key_pem($0) }
        guard let pkey else {
            throw OpenSSL.failure("key.invalid", "the PEM body decodes but is not a readable public key")
        }
        return pkey
    }
}

extension StringProtocol {
    var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        replacingOccurrences(of: target, with: replacement)
    }
}
