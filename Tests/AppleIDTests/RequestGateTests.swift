import Foundation
import Synchronization
import Testing
@testable import AppleID
import TestSupport

/// The client's hook for the team's rate budget: every call to a gated endpoint is admitted
/// first and its answer observed (or its lack of one reported); `/auth/keys` is not gated; a
/// refusal sends nothing.
@Suite struct RequestGateTests {
    /// Records admissions and answers; refuses with `refusal` when set.
    final class RecordingGate: RequestGate {
        let events = Mutex<[String]>([])
        let refusal: AppleIDError?
        init(refusal: AppleIDError? = nil) { self.refusal = refusal }

        func admit(_ endpoint: GatedEndpoint) async throws(AppleIDError) {
            events.withLock { $0.append("admit \(endpoint.rawValue)") }
            if let refusal { throw refusal }
        }

        func observe(_ endpoint: GatedEndpoint, status: Int, retryAfter: Duration?) async {
            events.withLock { $0.append("observe \(endpoint.rawValue) \(status) \(retryAfter.map { "\($0.seconds)" } ?? "-")") }
        }

        func unanswered(_ endpoint: GatedEndpoint) async {
            events.withLock { $0.append("unanswered \(endpoint.rawValue)") }
        }
    }

    static func client(_ transport: ScriptedTransport, gate: RecordingGate) throws -> AppleIDClient {
        AppleIDClient(baseURL: "https://appleid.example", transport: transport,
                      secrets: ClientSecretProvider(credentials: try Fixtures.credentials(), clock: ManualClock()),
                      clock: ManualClock(), gate: gate)
    }

    static func answering(_ status: Int, _ body: String, headers: [(String, String)] = []) -> ScriptedTransport {
        ScriptedTransport { _ in HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(body.utf8)) }
    }

    @Test func everyGatedCallIsAdmittedThenObservedAndKeysAreNot() async throws {
        let gate = RecordingGate()
        let ok = #"{"access_token":"a","token_type":"Bearer","expires_in":3600,"transfer_sub":"t","sub":"s"}"#
        let client = try Self.client(Self.answering(200, ok), gate: gate)
        _ = try await client.validateRefreshToken("r")
        try await client.revoke(token: "r", hint: "refresh_token")
        _ = try await client.exchangeSub("s", target: "ABCDE12345", accessToken: "a")
        _ = try? await client.fetchKeys()
        #expect(gate.events.withLock { $0 } == [
            "admit /auth/token", "observe /auth/token 200 -", "admit /auth/revoke", "observe /auth/revoke 200 -",
            "admit /auth/usermigrationinfo", "observe /auth/usermigrationinfo 200 -",
        ])
    }

    @Test func a429IsObservedWithItsRetryAfterAndStillThrown() async throws {
        let gate = RecordingGate()
        let client = try Self.client(Self.answering(429, "", headers: [("Retry-After", "3")]), gate: gate)
        await #expect { try await client.validateRefreshToken("r") } throws: { error in
            (error as? AppleIDError)?.httpStatus == 429 && (error as? AppleIDError)?.retryAfter == .seconds(3)
        }
        #expect(gate.events.withLock { $0 } == ["admit /auth/token", "observe /auth/token 429 3.0"])
    }

    @Test func aCallWithoutAnAnswerIsReportedAsUnanswered() async throws {
        let gate = RecordingGate()
        let transport = ScriptedTransport { _ throws(TransportError) in throw TransportError(kind: .connectionFailed, message: "refused") }
        let client = try Self.client(transport, gate: gate)
        await #expect { try await client.validateRefreshToken("r") } throws: { error in
            (error as? AppleIDError)?.transportKind == .connectionFailed
        }
        #expect(gate.events.withLock { $0 } == ["admit /auth/token", "unanswered /auth/token"])
    }

    @Test func aRefusedAdmissionSendsNothing() async throws {
        let stopped = AppleIDError(errorClass: .transient, detail: "stopping", transportKind: .cancelled)
        let gate = RecordingGate(refusal: stopped)
        let transport = Self.answering(200, "{}")
        let client = try Self.client(transport, gate: gate)
        await #expect { try await client.revoke(token: "r", hint: "refresh_token") } throws: { error in
            (error as? AppleIDError)?.isCancellation == true
        }
        #expect(transport.requests.isEmpty)
        #expect(gate.events.withLock { $0 } == ["admit /auth/revoke"])
    }
}
