import Testing
@testable import AppleID

@Suite struct HTTPTypesTests {
    @Test func descriptionsHideBodiesAndHeaders() {
        let request = HTTPRequest(method: "POST", url: "https://appleid.apple.com/auth/token",
                                  headers: [("Authorization", "Bearer SECRET1")], body: Array("client_secret=SECRET2".utf8))
        let response = HTTPResponse(status: 200, headers: [("Set-Cookie", "SECRET3")], body: Array(#"{"access_token":"SECRET4"}"#.utf8))
        for text in [String(describing: request), String(reflecting: request), String(describing: response), String(reflecting: response)] {
            #expect(!text.contains("SECRET"), "\(text)")
        }
        var dumped = ""
        dump(request, to: &dumped)
        dump(response, to: &dumped)
        #expect(!dumped.contains("SECRET"))
        #expect(request.description == "POST https://appleid.apple.com/auth/token (21 body bytes)")
        let token = TokenResponse(accessToken: "SECRET5", refreshToken: "SECRET6", idToken: "SECRET7")
        var tokenDump = ""
        dump(token, to: &tokenDump)
        #expect(!String(describing: token).contains("SECRET") && !tokenDump.contains("SECRET"))
    }

    @Test func headerLookupIsCaseInsensitive() {
        let response = HTTPResponse(status: 200, headers: [("Retry-After", "5"), ("retry-after", "9")])
        #expect(response.header("RETRY-AFTER") == "5")
        #expect(response.header("missing") == nil)
        #expect(HTTPRequest(url: "u", headers: [("Content-Type", "x")]).header("content-type") == "x")
    }
}
