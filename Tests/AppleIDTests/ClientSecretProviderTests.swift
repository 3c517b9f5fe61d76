import Foundation
import Testing
@testable import AppleID
import TestSupport

@Suite struct ClientSecretProviderTests {
    @Test func reusesUntilMarginThenReMints() throws {
        let clock = ManualClock()
        let provider = ClientSecretProvider(credentials: try Fixtures.credentials(), lifetime: .seconds(3600), refreshMargin: .seconds(300), clock: clock)
        let first = try provider.secret()
        #expect(provider.mintCount == 1)
        clock.advance(by: .seconds(3000))                       // 600 s left > 300 s margin
        #expect(try provider.secret() == first)
        #expect(provider.mintCount == 1)
        clock.advance(by: .seconds(299))                        // 301 s left
        #expect(try provider.secret() == first)
        clock.advance(by: .seconds(2))                          // 299 s left: re-mint
        let second = try provider.secret()
        #expect(second != first)
        #expect(provider.mintCount == 2)
        let exp = (Fixtures.jsonSegment(second, 1)["exp"] as? NSNumber)?.doubleValue
        #expect(exp == (clock.now.timeIntervalSince1970).rounded(.down) + 3600)
    }

    @Test func invalidateForcesReMint() throws {
        let provider = ClientSecretProvider(credentials: try Fixtures.credentials(), clock: ManualClock())
        _ = try provider.secret()
        provider.invalidate()
        _ = try provider.secret()
        #expect(provider.mintCount == 2)
    }

    @Test func marginIsClampedToHalfTheLifetime() throws {
        let provider = ClientSecretProvider(credentials: try Fixtures.credentials(), lifetime: .seconds(600), refreshMargin: .seconds(10_000), clock: ManualClock())
        #expect(provider.refreshMargin == .seconds(300))
        #expect(provider.lifetime == .seconds(600))
    }

    @Test func concurrentCallersShareOneMint() async throws {
        let provider = ClientSecretProvider(credentials: try Fixtures.credentials(), clock: ManualClock())
        let secrets = await withTaskGroup(of: String?.self, returning: Set<String?>.self) { group in
            for _ in 0..<100 { group.addTask { try? provider.secret() } }
            return await group.reduce(into: []) { $0.insert($1) }
        }
        #expect(secrets.count == 1)
        #expect(secrets.first??.isEmpty == false)
        #expect(provider.mintCount == 1)
    }
}
