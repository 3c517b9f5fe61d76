/// One HTTP response the sandbox will send.
struct SandboxResponse: Sendable {
    var status: Int
    var body: [UInt8]
    var contentType: String?
    /// Adds `Cache-Control: no-store` and `Pragma: no-cache`, as Apple's token endpoints do (TN3107).
    var noStore: Bool
    var headers: [(String, String)] = []
    /// The Apple `error` code in the body, for the counters.
    var errorCode: String?

    static let appleJSONType = "application/json;charset=UTF-8"

    /// An Apple-style JSON body (`application/json;charset=UTF-8`, no-store).
    static func appleJSON(_ json: String, status: Int = 200) -> SandboxResponse {
        SandboxResponse(status: status, body: Array(json.utf8), contentType: appleJSONType, noStore: true)
    }

    /// Apple's ErrorResponse `{"error":"<code>"}` (400 unless given). `reason` is a sandbox-only hint
    /// sent in `X-Sandbox-Reason`; it never contains secrets.
    static func appleError(_ code: String, reason: String? = nil, status: Int = 400) -> SandboxResponse {
        var r = appleJSON("{\"error\":\"\(code)\"}", status: status)
        r.errorCode = code
        if let reason { r.headers.append(("X-Sandbox-Reason", reason)) }
        return r
    }

    /// `200 OK` with an empty body (revoke).
    static func emptyOK() -> SandboxResponse {
        SandboxResponse(status: 200, body: [], contentType: nil, noStore: true)
    }

    /// Admin API JSON (`application/json`).
    static func adminJSON(_ json: String, status: Int = 200) -> SandboxResponse {
        SandboxResponse(status: status, body: Array(json.utf8), contentType: "application/json", noStore: true)
    }

    /// Admin API error `{"error":"bad_request","message":"<field>: <reason>"}`.
    static func adminError(_ message: String, status: Int = 400) -> SandboxResponse {
        adminJSON("{\"error\":\"bad_request\",\"message\":\(JSONText.quote(message))}", status: status)
    }

    static func plain(_ text: String, status: Int) -> SandboxResponse {
        SandboxResponse(status: status, body: Array(text.utf8), contentType: "text/plain", noStore: false)
    }

    static func notFound() -> SandboxResponse { plain("not found\n", status: 404) }

    static func methodNotAllowed(_ allow: String) -> SandboxResponse {
        var r = plain("method not allowed\n", status: 405)
        r.headers.append(("Allow", allow))
        return r
    }
}

/// Small JSON text helpers for hand-built response bodies.
enum JSONText {
    /// `s` as a JSON string literal, with quotes.
    static func quote(_ s: String) -> String {
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
        return out
    }
}
