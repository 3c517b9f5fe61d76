import AppleID
import Foundation
import Queue

/// The Apple clients this process may call, one per (team ID, client ID), each with its own
/// client-secret provider. Job specs name a team and client; the registry resolves them.
public struct AppleClientRegistry: Sendable {
    private let clients: [String: AppleIDClient]
    /// Every (team ID, client ID) held, sorted.
    public let pairs: [TeamClient]

    /// One team and client the registry holds credentials for.
    public struct TeamClient: Sendable, Hashable, Encodable {
        public let teamID: String, clientID: String
        enum CodingKeys: String, CodingKey { case teamID = "team_id", clientID = "client_id" }
    }

    public init(_ clients: [(teamID: String, client: AppleIDClient)]) {
        var map: [String: AppleIDClient] = [:]
        for entry in clients { map[Self.key(entry.teamID, entry.client.clientID)] = entry.client }
        self.clients = map
        self.pairs = Set(clients.map { TeamClient(teamID: $0.teamID, clientID: $0.client.clientID) })
            .sorted { ($0.teamID, $0.clientID) < ($1.teamID, $1.clientID) }
    }

    /// The jobs this registry can run (`Queue.JobScope`): a job whose spec names a `team_id` is
    /// in scope only for a team and client held here (matched as `{"team_id", "client_id"}`).
    /// A worker never claims the others, nor pauses them: a worker with their credentials may.
    public var jobScope: JobScope {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let allowed = pairs.map { String(decoding: (try? encoder.encode($0)) ?? Data(), as: UTF8.self) }
        return JobScope(key: "team_id", allowed: allowed,
                        reason: "no Apple credentials configured on this worker for its team and client "
                            + "(SIWA_TEAMS_FILE, or SIWA_TEAM_ID, SIWA_KEY_ID, SIWA_KEY_FILE, SIWA_CLIENT_ID); "
                            + "it waits for a worker that has them")
    }

    public func client(teamID: String, clientID: String) -> AppleIDClient? {
        clients[Self.key(teamID, clientID)]
    }

    public var isEmpty: Bool { clients.isEmpty }

    private static func key(_ team: String, _ client: String) -> String { team + "\u{1F}" + client }
}
