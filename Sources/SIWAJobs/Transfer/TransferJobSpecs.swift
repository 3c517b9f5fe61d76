/// The spec of a `transfer-export` job: `team_id`, `client_id` (the sending team's), `target` (the
/// recipient's Team ID) and `transfer_date` (`YYYY-MM-DD`).
struct TransferExportSpec: JobSpec {
    let teamID: String
    let clientID: String
    let target: String
    let transferDate: String

    init(teamID: String, clientID: String, target: String, transferDate: String) {
        self.teamID = teamID
        self.clientID = clientID
        self.target = target
        self.transferDate = transferDate
    }

    enum CodingKeys: String, CodingKey {
        case teamID = "team_id", clientID = "client_id", target, transferDate = "transfer_date"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        teamID = try c.nonEmptyString(.teamID)
        clientID = try c.nonEmptyString(.clientID)
        target = try c.nonEmptyString(.target)
        transferDate = try c.nonEmptyString(.transferDate)
    }
}

/// The spec of a `transfer-import` job: `team_id`, `client_id` (the recipient's), `import_id` (a
/// loaded hand-off file), `transfer_date`, and optional `source_team_id`. `import_id` is written
/// as a string of digits, as the first releases did; a JSON number is read too.
struct TransferImportSpec: JobSpec {
    let teamID: String
    let clientID: String
    let importID: Int64
    let transferDate: String
    /// The sending team, when known (its rows give the old email of users Apple returns none for).
    let sourceTeamID: String?

    init(teamID: String, clientID: String, importID: Int64, transferDate: String, sourceTeamID: String?) {
        self.teamID = teamID
        self.clientID = clientID
        self.importID = importID
        self.transferDate = transferDate
        self.sourceTeamID = sourceTeamID
    }

    enum CodingKeys: String, CodingKey {
        case teamID = "team_id", clientID = "client_id", importID = "import_id", transferDate = "transfer_date"
        case sourceTeamID = "source_team_id"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        teamID = try c.nonEmptyString(.teamID)
        clientID = try c.nonEmptyString(.clientID)
        if let number = try? c.decode(Int64.self, forKey: .importID) {
            importID = number
        } else {
            guard let id = Int64(try c.nonEmptyString(.importID)) else {
                throw JobSpecError(field: "import_id", message: "is not a number")
            }
            importID = id
        }
        transferDate = try c.nonEmptyString(.transferDate)
        sourceTeamID = try c.decodeIfPresent(String.self, forKey: .sourceTeamID).flatMap { $0.isEmpty ? nil : $0 }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(teamID, forKey: .teamID)
        try c.encode(clientID, forKey: .clientID)
        try c.encode(String(importID), forKey: .importID)
        try c.encode(transferDate, forKey: .transferDate)
        try c.encodeIfPresent(sourceTeamID, forKey: .sourceTeamID)
    }
}
