import Foundation
import Testing
@testable import AppleID
import TestSupport
import SIWACrypto

@Suite struct VerificationJWKSCacheTests {
    let clock = ManualClock(start: VerificationFixtures.nowDate)

    private func found(_ lookup: JWKSLookup) -> RSAPublicKey? {
        if case .found(let key) = lookup { return key }
        return nil
    }

    private func missingDetail(_ lookup: JWKSLookup) -> String? {
        if case .missing(let detail) = lookup { return detail }
        return nil
    }

    @Test func loadsOnFirstLookupAndServesKnownKidsFromTheCache() async throws {
        let provider = try VerificationFixtures.standardProvider()
        let cache = JWKSCache(provider: provider, clock: clock)
        #expect(await cache.fetchCount == 0)
        for _ in 0..<5 {
            #expect(found(await cache.lookup(kid: VerificationFixtures.kidA)) != nil)
            #expect(found(await cache.lookup(kid: VerificationFixtures.kidB)) != nil)
        }
        #expect(await cache.fetchCount == 1)
        #expect(provider.fetches == 1)
        #expect(await cache.knownKIDs == [VerificationFixtures.kidA, VerificationFixtures.kidB])
    }

    @Test func unknownKidRefetchesOncePerInterval() async throws {
        let provider = try VerificationFixtures.standardProvider()
        let cache = JWKSCache(provider: provider, clock: clock)
        _ = await cache.lookup(kid: VerificationFixtures.kidA)
        clock.advance(by: .seconds(60))

        let first = missingDetail(await cache.lookup(kid: "NOPE1"))
        #expect(provider.fetches == 2, "exactly one refetch for the unknown kid")
        #expect(first?.contains("kid \"NOPE1\" not in the JWKS; known kids: KEYAAA1, KEYBBB2") == true)

        clock.advance(by: .seconds(59))
        let second = missingDetail(await cache.lookup(kid: "NOPE2"))
        #expect(provider.fetches == 2, "a second unknown kid inside the interval does not refetch")
        #expect(second?.contains("refetch skipped: last fetch 59 s ago, minimum interval 60 s") == true)
        _ = await cache.lookup(kid: "NOPE1")
        #expect(provider.fetches == 2)

        clock.advance(by: .seconds(1))
        _ = await cache.lookup(kid: "NOPE2")
        #expect(provider.fetches == 3, "the interval has passed")
        #expect(await cache.fetchCount == 3)
    }

    @Test func rotationIsPickedUpAfterExactlyOneRefetch() async throws {
        let keys = try VerificationFixtures.keys()
        let provider = ScriptedJWKSProvider(VerificationFixtures.jwks([("OLD", keys[0])]))
        let cache = JWKSCache(provider: provider, clock: clock)
        #expect(found(await cache.lookup(kid: "OLD")) != nil)
        clock.advance(by: .seconds(3600))
        provider.serve(VerificationFixtures.jwks([("OLD", keys[0]), ("NEW", keys[1])]))
        let rotated = try #require(found(await cache.lookup(kid: "NEW")))
        #expect(rotated.n == keys[1].publicKey.n)
        #expect(provider.fetches == 2)
        clock.advance(by: .seconds(3600))
        provider.serve(VerificationFixtures.jwks([("NEW", keys[1])]))
        _ = await cache.lookup(kid: "OTHER")
        #expect(provider.fetches == 3)
        #expect(found(await cache.lookup(kid: "OLD")) == nil, "a successful fetch replaces the whole set")
        #expect(await cache.knownKIDs == ["NEW"])
    }

    @Test func failedFetchKeepsTheLastGoodSet() async throws {
        let provider = try VerificationFixtures.standardProvider()
        let cache = JWKSCache(provider: provider, clock: clock)
        _ = await cache.lookup(kid: VerificationFixtures.kidA)
        provider.serve(nil)
        clock.advance(by: .seconds(120))
        let detail = missingDetail(await cache.lookup(kid: "NEWKID"))
        #expect(provider.fetches == 2)
        #expect(detail?.contains("fetch failed: JWKS fetch: scripted outage") == true)
        #expect(await cache.lastFetchError == JWKSError(field: "fetch", message: "scripted outage"))
        #expect(found(await cache.lookup(kid: VerificationFixtures.kidA)) != nil)
        #expect(found(await cache.lookup(kid: VerificationFixtures.kidB)) != nil)

        provider.serve(Array(#"{"keys":[]}"#.utf8))
        clock.advance(by: .seconds(120))
        _ = await cache.lookup(kid: "NEWKID")
        #expect(provider.fetches == 3)
        #expect(await cache.lastFetchError?.field == "keys", "an unusable document is a failed fetch")
        #expect(await cache.knownKIDs == [VerificationFixtures.kidA, VerificationFixtures.kidB])
    }

    @Test func firstFetchFailureIsReportedAndRateLimited() async throws {
        let provider = ScriptedJWKSProvider(nil)
        let cache = JWKSCache(provider: provider, clock: clock)
        let detail = missingDetail(await cache.lookup(kid: VerificationFixtures.kidA))
        #expect(detail == "kid \"KEYAAA1\" not in the JWKS; no JWKS loaded; fetch failed: JWKS fetch: scripted outage")
        _ = await cache.lookup(kid: VerificationFixtures.kidA)
        #expect(provider.fetches == 1)
        provider.serve(VerificationFixtures.jwks([(VerificationFixtures.kidA, try VerificationFixtures.keys()[0])]))
        clock.advance(by: .seconds(60))
        #expect(found(await cache.lookup(kid: VerificationFixtures.kidA)) != nil)
        #expect(await cache.lastFetchError == nil)
    }

    @Test func staleSetIsRefreshedButStillServedWhenTheRefreshFails() async throws {
        let provider = try VerificationFixtures.standardProvider()
        let cache = JWKSCache(provider: provider, maximumAge: .seconds(3600), clock: clock)
        _ = await cache.lookup(kid: VerificationFixtures.kidA)
        clock.advance(by: .seconds(3599))
        _ = await cache.lookup(kid: VerificationFixtures.kidA)
        #expect(provider.fetches == 1)
        clock.advance(by: .seconds(2))
        provider.serve(nil)
        #expect(found(await cache.lookup(kid: VerificationFixtures.kidA)) != nil)
        #expect(provider.fetches == 2)
    }

    @Test func refreshIgnoresTheIntervalAndThrowsOnFailure() async throws {
        let provider = try VerificationFixtures.standardProvider()
        let cache = JWKSCache(provider: provider, clock: clock)
        try await cache.refresh()
        try await cache.refresh()
        #expect(provider.fetches == 2)
        provider.serve(Array("nope".utf8))
        await #expect(throws: JWKSError(field: "json", message: "not a JSON object")) {
            try await cache.refresh()
        }
        #expect(await cache.knownKIDs.count == 2)
    }

    @Test func concurrentUnknownKidLookupsStartAtMostOneFetch() async throws {
        let provider = try VerificationFixtures.standardProvider()
        let cache = JWKSCache(provider: provider, clock: clock)
        _ = await cache.lookup(kid: VerificationFixtures.kidA)
        clock.advance(by: .seconds(300))
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<20 {
                group.addTask { _ = await cache.lookup(kid: "UNKNOWN\(i)") }
            }
        }
        #expect(provider.fetches == 2)
    }
}
