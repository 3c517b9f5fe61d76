import AppleID

/// The Apple clients this process may call, one per (team ID, client ID), each with its own
/// client-secret provider. Job specs name a team and client; the registry resolves them.
public struct AppleClientRegistry: Sendable {
    private let clients: [String: AppleIDClient]

    public init(_ clients: [(teamID: String, client: AppleIDClient)]) {
        var map: [String: AppleIDClient] = [:]
        for entry in clients { map[Self.key(entry.teamID, entry.client.clientID)] = entry.client }
        self.clients = map
    }

    public func client(teamID: String, clientID: String) -> AppleIDClient? {
        clients[Self.key(teamID, clientID)]
    }

    public var isEmpty: Bool { clients.isEmpty }

    private static func key(_ team: String, _ client: String) -> String { team + "\u{1F}" + client }
}
