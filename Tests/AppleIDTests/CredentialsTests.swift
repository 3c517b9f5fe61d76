import Testing
@testable import AppleID
import SIWACrypto

@Suite struct CredentialsTests {
    static let invalid: [(team: String, key: String, client: String, field: String)] = [
        ("DEF123GHI", "ABC123DEFG", "com.example.app", "teamID"),
        ("def123ghij", "ABC123DEFG", "com.example.app", "teamID"),
        ("DEF123GHIJ ", "ABC123DEFG", "com.example.app", "teamID"),
        ("DEF123GHIJ", "ABC123DEFGH", "com.example.app", "keyID"),
        ("DEF123GHIJ", "ABC-23DEFG", "com.example.app", "keyID"),
        ("DEF123GHIJ", "ABC123DEFG", "", "clientID"),
        ("DEF123GHIJ", "ABC123DEFG", "com.example app", "clientID"),
        ("DEF123GHIJ", "ABC123DEFG", "DEF123GHIJ", "clientID"),
        ("DEF123GHIJ", "ABC123DEFG", "DEF123GHIJ.com.example.app", "clientID"),
        ("DEF123GHIJ", "ABC123DEFG", "example", "clientID"),
        ("DEF123GHIJ", "ABC123DEFG", "com..example", "clientID"),
        ("DEF123GHIJ", "ABC123DEFG", "com.example.app.", "clientID"),
        ("DEF123GHIJ", "ABC123DEFG", "com.exa_mple", "clientID"),
    ]

    @Test(arguments: invalid)
    func rejectsAndNamesField(_ c: (team: String, key: String, client: String, field: String)) throws {
        let key = try P256PrivateKey.generate()
        do {
            _ = try AppleCredentials(teamID: c.team, keyID: c.key, clientID: c.client, privateKey: key)
            Issue.record("accepted \(c)")
        } catch {
            #expect(error.setting == c.field)
        }
    }

    @Test func acceptsBundleAndServicesIDs() throws {
        let key = try P256PrivateKey.generate()
        for client in ["com.example.app", "com.Example.web-login", "io.x.y.z.Service2"] {
            let creds = try AppleCredentials(teamID: "DEF123GHIJ", keyID: "ABC123DEFG", clientID: client, privateKey: key)
            #expect(creds.clientID == client)
        }
    }

    @Test func privateKeyPEMErrorsNameTheField() throws {
        do {
            _ = try AppleCredentials(teamID: "DEF123GHIJ", keyID: "ABC123DEFG", clientID: "com.example.app", privateKeyPEM: "nope")
            Issue.record("accepted a non-PEM key")
        } catch {
            #expect(error.setting == "privateKey")
            #expect(error.description.contains("pem.not_pem"))
        }
        let pem = try P256PrivateKey.generate().pkcs8PEM
        let creds = try AppleCredentials(teamID: "DEF123GHIJ", keyID: "ABC123DEFG", clientID: "com.example.app",
                                         privateKeyPEM: pem.replacingOccurrences(of: "\n", with: "\\n"))
        #expect(creds.description == "AppleCredentials(team: DEF123GHIJ, key: ABC123DEFG, client: com.example.app)")
    }
}
