import Foundation
import Testing
@testable import AppleID
import TestSupport

@Suite struct ResponseClassifierTests {
    let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT

    func json(_ status: Int, _ body: String, _ headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json;charset=UTF-8")] + headers, body: Array(body.utf8))
    }

    static let appleCodes: [(String, AppleIDError.Class)] = [
        ("invalid_client", .configuration),
        ("unsupported_grant_type", .configuration),
        ("invalid_scope", .configuration),
        ("unauthorized_client", .configuration),
        ("invalid_grant", .permanent),
        ("invalid_request", .permanent),
        ("some_new_code", .permanent),
    ]

    @Test(arguments: appleCodes)
    func appleErrorCodes(_ code: String, _ expected: AppleIDError.Class) throws {
        let error = try #require(ResponseClassifier.failure(for: json(400, #"{"error":"\#(code)"}"#), now: now))
        #expect(error.errorClass == expected)
        #expect(error.appleError == code)
        #expect(error.httpStatus == 400)
        #expect(error.detail == code)
    }

    static let statuses: [(Int, AppleIDError.Class)] = [
        (429, .transient), (500, .transient), (502, .transient), (503, .transient), (504, .transient), (408, .transient),
        (401, .permanent), (403, .permanent), (404, .permanent), (301, .configuration),
    ]

    @Test(arguments: statuses)
    func httpStatuses(_ status: Int, _ expected: AppleIDError.Class) throws {
        let error = try #require(ResponseClassifier.failure(for: json(status, "{}"), now: now))
        #expect(error.errorClass == expected)
        #expect(error.httpStatus == status)
        #expect(error.appleError == nil)
    }

    @Test func successStatusesAreNotFailures() {
        #expect(ResponseClassifier.failure(for: json(200, ""), now: now) == nil)
        #expect(ResponseClassifier.failure(for: json(204, ""), now: now) == nil)
    }

    /// An HTML page (an edge, not Apple) is transient on any status, through the client's own path
    /// (`AppleIDClient.validateRefreshToken`: the classifier for a non-2xx, the body parse for a 200).
    /// On a 4xx it retries once; a 429 or 5xx is classified by its status.
    @Test(arguments: [200, 400, 403, 429, 503])
    func htmlBodyIsTransient(_ status: Int) async throws {
        let transport = AppleIDClientTests.reply(status, "<html><center>Apple</center></html>", contentType: "text/html; charset=utf-8")
        let error = try #require(await AppleIDClientTests.failure(transport) { try await $0.validateRefreshToken("r") })
        #expect(transport.requests.count == 1)
        #expect(error.errorClass == .transient)
        #expect(error.httpStatus == status)
        if status == 429 || status == 503 {
            #expect(error.detail.hasPrefix("HTTP \(status)"), "\(error.detail)")
        } else {
            #expect(error.detail == "unparseable response body (text/html)")
            #expect(error.retriesOnce == (status != 200))
        }
    }

    @Test func truncatedJSONIsTransient() throws {
        let error = try #require(ResponseClassifier.failure(for: json(400, #"{"error":"invalid_gr"#), now: now))
        #expect(error.errorClass == .transient)
        #expect(error.detail == "unparseable response body (application/json)")
    }

    @Test func errorDescriptionIsIncludedTruncatedAndSanitized() throws {
        let long = String(repeating: "x", count: 500)
        let error = try #require(ResponseClassifier.failure(for: json(400, #"{"error":"invalid_grant","error_description":"bad\n\#(long)"}"#), now: now))
        #expect(error.detail.hasPrefix("invalid_grant: bad" + "xxx"))
        #expect(!error.detail.contains("\n"))
        #expect(error.detail.count <= "invalid_grant: ".count + 201)
        #expect(ResponseClassifier.failure(for: json(400, #"{"error_description":"x"}"#), now: now)?.errorClass == .permanent)
        #expect(ResponseClassifier.failure(for: HTTPResponse(status: 400), now: now)?.errorClass == .permanent)
    }

    @Test func retryAfterDeltaAndHTTPDate() throws {
        let delta = try #require(ResponseClassifier.failure(for: json(429, "{}", [("Retry-After", "120")]), now: now))
        #expect(delta.retryAfter == .seconds(120))
        let date = try #require(ResponseClassifier.failure(for: json(503, "", [("retry-after", "Sun, 06 Nov 1994 08:51:37 GMT")]), now: now))
        #expect(date.retryAfter == .seconds(120))
        #expect(RetryAfter.parse("Sunday, 06-Nov-94 08:50:37 GMT", now: now) == .seconds(60))
        #expect(RetryAfter.parse("Sun Nov  6 08:49:47 1994", now: now) == .seconds(10))
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:00:00 GMT", now: now) == .seconds(0))  // past date: no wait
        #expect(RetryAfter.parse("soon", now: now) == nil)
        #expect(RetryAfter.parse("-5", now: now) == nil)
        #expect(RetryAfter.parse(nil, now: now) == nil)
        #expect(try #require(ResponseClassifier.failure(for: json(500, "{}"), now: now)).retryAfter == nil)
    }

    @Test func descriptionIsStructured() {
        let error = AppleIDError(errorClass: .transient, httpStatus: 429, retryAfter: .seconds(3), detail: "HTTP 429 rate limited")
        #expect(error.description == "apple transient http=429 retry_after=3.0s: HTTP 429 rate limited")
        #expect(error.isRetryable)
    }
}
