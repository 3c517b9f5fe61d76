import Foundation
import SIWACore

extension ValueType where Value == String {
    /// An Apple team ID or key ID (`kid`): exactly 10 characters A-Z and 0-9, upper case as Apple
    /// prints them (a lower-case copy matches no stored account and slips past the own-team check
    /// of a transfer). A malformed one is a usage error naming the flag (exit 64), refused before
    /// any database or Apple call.
    /// - Parameters:
    ///   - what: the noun in the message, e.g. `Team ID` or `key ID`.
    ///   - source: where to find it, e.g. `copy it from the team's membership page`.
    public static func appleTenCharacterID(_ what: String, from source: String) -> ValueType<String> {
        ValueType(summary: nil) { (text: String) throws(ValueError) -> String in
            guard !text.allSatisfy(\.isWhitespace) else { throw ValueError(expected: "a value", kind: .empty) }
            guard text.utf8.count == 10,
                  text.utf8.allSatisfy({ (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }) else {
                throw ValueError(expected: "a 10-character Apple \(what) (A-Z and 0-9; \(source))")
            }
            return text
        }
    }

    /// An Apple client ID (an App ID or Services ID, e.g. `com.example.app`): printable ASCII
    /// without spaces, at most 255 characters. The environment's `SIWA_CLIENT_ID` follows the
    /// same rule (`SIWAConfiguration.jobTarget`).
    public static var appleClientID: ValueType<String> {
        ValueType(summary: nil) { (text: String) throws(ValueError) -> String in
            guard !text.allSatisfy(\.isWhitespace) else { throw ValueError(expected: "a value", kind: .empty) }
            guard AppleIdentifier.isClientID(text) else {
                throw ValueError(expected: "a client ID (App ID or Services ID: printable ASCII without spaces, e.g. com.example.app)")
            }
            return text
        }
    }

    /// A name recorded beside what a command does (`--created-by`): 1 to 200 characters, none of
    /// them a control or format character (it is shown in listings and audit rows as it is).
    public static var recordedName: ValueType<String> {
        ValueType(summary: nil) { (text: String) throws(ValueError) -> String in
            guard !text.allSatisfy(\.isWhitespace) else { throw ValueError(expected: "a value", kind: .empty) }
            guard text.unicodeScalars.count <= 200, !text.unicodeScalars.contains(where: PrintableText.isHidden) else {
                throw ValueError(expected: "a name of at most 200 characters, without control characters")
            }
            return text
        }
    }

    /// An `http://` or `https://` URL with a host, e.g. a sandbox's base URL
    /// (`http://127.0.0.1:8080`). A trailing `/` is dropped so paths can be appended.
    public static var httpURL: ValueType<String> {
        ValueType(summary: nil) { (text: String) throws(ValueError) -> String in
            guard !text.allSatisfy(\.isWhitespace) else { throw ValueError(expected: "a value", kind: .empty) }
            let expected = "an http:// or https:// URL with a host (and a port from 1 to 65535 if any), e.g. http://127.0.0.1:8080"
            guard !text.contains("@") else {
                // Never echoed: the value may hold a password, even one that keeps it from parsing.
                throw ValueError(expected: "an http:// or https:// URL without a user name or password",
                                 redacted: Loopback.redactingUserInfo(text))
            }
            let components = URLComponents(string: text)
            guard let components, let scheme = components.scheme?.lowercased(),
                  ["http", "https"].contains(scheme), let host = components.host, !host.isEmpty,
                  (components.port ?? 80) >= 1, (components.port ?? 80) <= 65535,
                  components.query == nil, components.fragment == nil else {
                throw ValueError(expected: expected)
            }
            return text.hasSuffix("/") ? String(text.dropLast()) : text
        }
    }

    /// A path to write a file at. `-` is refused (it would create a file named `-`) where the
    /// output must be a file, e.g. a hand-off file or a key.
    public static var filePath: ValueType<String> {
        ValueType(summary: nil) { (text: String) throws(ValueError) -> String in
            guard !text.allSatisfy(\.isWhitespace) else { throw ValueError(expected: "a value", kind: .empty) }
            guard text != "-" else { throw ValueError(expected: "a file path (this output cannot go to standard output)") }
            return text
        }
    }
}
