import MicroHTTP
import SIWACore

/// The sandbox's response shapes: Apple's (apple-api.md §2.6, TN3107) and its admin API's.
extension HTTPServerResponse {
    static let appleJSONType = "application/json;charset=UTF-8"

    /// `Cache-Control: no-store` and `Pragma: no-cache`, as Apple's token endpoints send (TN3107).
    static let noStoreHeaders = [HTTPHeader("Cache-Control", "no-store"), HTTPHeader("Pragma", "no-cache")]

    /// An Apple-style JSON body (`application/json;charset=UTF-8`), no-store unless told otherwise.
    static func appleJSON(_ json: String, status: Int = 200, noStore: Bool = true) -> HTTPServerResponse {
        HTTPServerResponse(status: status, body: Array(json.utf8), contentType: appleJSONType,
                           headers: noStore ? noStoreHeaders : [])
    }

    /// An Apple-style JSON body already encoded (`application/json;charset=UTF-8`), no-store.
    static func appleJSON(bytes: [UInt8], status: Int = 200) -> HTTPServerResponse {
        HTTPServerResponse(status: status, body: bytes, contentType: appleJSONType, headers: noStoreHeaders)
    }

    /// Apple's ErrorResponse `{"error":"<code>"}` (400 unless given). `reason` is a sandbox-only hint
    /// sent in `X-Sandbox-Reason`; it never contains secrets.
    static func appleError(_ code: String, reason: String? = nil, status: Int = 400) -> HTTPServerResponse {
        var r = appleJSON("{\"error\":\"\(code)\"}", status: status)
        r.errorCode = code
        if let reason { r.headers.append(HTTPHeader("X-Sandbox-Reason", reason)) }
        return r
    }

    /// `200 OK` with an empty body (revoke).
    static func emptyOK() -> HTTPServerResponse {
        HTTPServerResponse(status: 200, headers: noStoreHeaders)
    }

    /// Admin API JSON (`application/json`, no-store).
    static func adminJSON(_ json: String, status: Int = 200) -> HTTPServerResponse {
        adminJSON(bytes: Array(json.utf8), status: status)
    }

    /// Admin API JSON from encoded bytes.
    static func adminJSON(bytes: [UInt8], status: Int = 200) -> HTTPServerResponse {
        HTTPServerResponse(status: status, body: bytes, contentType: "application/json", headers: noStoreHeaders)
    }

    /// Admin API error `{"error":"bad_request","message":"<field>: <reason>"}`.
    static func adminError(_ message: String, status: Int = 400) -> HTTPServerResponse {
        adminJSON("{\"error\":\"bad_request\",\"message\":\(JSONText.quote(message))}", status: status)
    }

    static func notFound() -> HTTPServerResponse { plain("not found\n", status: 404) }

    static func methodNotAllowed(_ allow: String) -> HTTPServerResponse {
        var r = plain("method not allowed\n", status: 405)
        r.headers.append(HTTPHeader("Allow", allow))
        return r
    }
}
