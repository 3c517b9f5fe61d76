import Foundation
import Synchronization
import Testing
@testable import AppleID
import TestSupport

/// `MigrationTokenProvider`: one `client_credentials` token shared by every caller, minted once
/// (single-flight), reused until shortly before `expires_in`, re-minted once after `invalid_grant`.
@Suite(.timeLimit(.minutes(5))) struct MigrationTokenProviderTests {
    /// A transport that answers `/auth/token` with numbered tokens after a short pause (so callers
    /// pile up on one mint) and counts the mints.
    final class Mint: Sendable {
        let count = Mutex(0)
        let failWith: String?
        init(failWith: String? = nil) { self.failWith = failWith }

        var transport: ScriptedTransport {
            ScriptedTransport { [self] request throws(TransportError) in
                let n = count.withLock { $0 += 1; return $0 }
                try? await Task.sleep(for: .milliseconds(30))
                let body = String(decoding: request.body, as: UTF8.self)
                #expect(body.contains("grant_type=client_credentials") && body.contains("scope=user.migration"))
                if let failWith { return HTTPResponse(status: 400, body: Array("{\"error\":\"\(failWith)\"}".utf8)) }
                return HTTPResponse(status: 200, body: Array("{\"access_token\":\"tok\(n)\",\"token_type\":\"Bearer\",\"expires_in\":3600}".utf8))
            }
        }
        var mints: Int { count.withLock { $0 } }
    }

    func provider(_ mint: Mint, clock: ManualClock) throws -> MigrationTokenProvider {
        let client = AppleIDClient(baseURL: "https://appleid.example", transport: mint.transport,
                                   secrets: ClientSecretProvider(credentials: try Fixtures.credentials()))
        return MigrationTokenProvider(client: client, refreshMargin: .seconds(300), clock: clock)
    }

    @Test func concurrentCallersShareOneMint() async throws {
        let mint = Mint()
        let p = try provider(mint, clock: ManualClock())
        let values = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<200 { group.addTask { try? await p.token().value } }
            var out: [String?] = []
            for await v in group { out.append(v) }
            return out
        }
        #expect(mint.mints == 1)
        #expect(Set(values) == ["tok1"])
    }

    @Test func reusedUntilTheMarginBeforeExpiryThenMintedAgain() async throws {
        let mint = Mint(), clock = ManualClock()
        let p = try provider(mint, clock: clock)
        #expect(try await p.token().value == "tok1")
        clock.advance(by: .seconds(3600 - 301))
        #expect(try await p.token().value == "tok1")
        #expect(mint.mints == 1)
        clock.advance(by: .seconds(2))   // inside the 300 s margin
        let next = try await p.token()
        #expect(next.value == "tok2" && next.generation == 2 && mint.mints == 2)
    }

    @Test func aBurstOfInvalidationsCausesOneRemint() async throws {
        let mint = Mint()
        let p = try provider(mint, clock: ManualClock())
        let first = try await p.token()
        let values = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<100 {
                group.addTask {
                    await p.invalidate(first)   // every caller saw invalid_grant with the old token
                    return try? await p.token().value
                }
            }
            var out: [String?] = []
            for await v in group { out.append(v) }
            return out
        }
        #expect(mint.mints == 2)
        #expect(Set(values) == ["tok2"])
        await p.invalidate(first)   // stale: tok2 stays
        #expect(try await p.token().value == "tok2" && mint.mints == 2)
    }

    @Test func aFailedMintIsNotCachedAndIsClassified() async throws {
        let mint = Mint(failWith: "invalid_client")
        let p = try provider(mint, clock: ManualClock())
        let results = await withTaskGroup(of: AppleIDError?.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    do throws(AppleIDError) {
                        _ = try await p.token()
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            var out: [AppleIDError?] = []
            for await v in group { out.append(v) }
            return out
        }
        #expect(results.allSatisfy { $0?.errorClass == .configuration && $0?.appleError == "invalid_client" })
        #expect(mint.mints == 1, "waiters share the failed mint")
        await #expect(throws: AppleIDError.self) { try await p.token() }
        #expect(mint.mints == 2, "the next caller tries again")
    }

    @Test func descriptionHidesTheToken() async throws {
        let p = try provider(Mint(), clock: ManualClock())
        let token = try await p.token()
        #expect(!"\(token)".contains("tok1") && !String(reflecting: token).contains("tok1"))
    }
}
