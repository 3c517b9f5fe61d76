import Foundation
import Testing
@testable import SIWAJobs

/// Specs are typed per kind, and `siwa.jobs.spec` stays readable both ways: rows the first
/// releases wrote (string fields via `jsonObject`) decode, and new rows carry the same keys and
/// value types.
@Suite(.timeLimit(.minutes(20))) struct JobSpecTests {
    func object(_ json: String) throws -> NSDictionary {
        try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? NSDictionary)
    }

    @Test func clientSpecsReadOldRowsAndWriteTheSameKeys() throws {
        let old = jsonObject(["team_id": "TEAMA12345", "client_id": "com.example.siwa"])
        let spec = try ClientJobSpec.decode(old)
        #expect(spec.teamID == "TEAMA12345" && spec.clientID == "com.example.siwa")
        #expect(try object(spec.json) == object(old))
    }

    @Test func transferSpecsReadOldRowsAndWriteTheSameKeys() throws {
        let oldExport = jsonObject(["team_id": "AAAAA11111", "client_id": "c", "target": "BBBBB22222", "transfer_date": "2025-03-01"])
        let export = try TransferExportSpec.decode(oldExport)
        #expect(export.target == "BBBBB22222" && export.transferDate == "2025-03-01")
        #expect(try object(export.json) == object(oldExport))

        let oldImport = jsonObject(["team_id": "BBBBB22222", "client_id": "c", "import_id": "42",
                                    "transfer_date": "2025-03-01", "source_team_id": "AAAAA11111"])
        let imported = try TransferImportSpec.decode(oldImport)
        #expect(imported.importID == 42 && imported.sourceTeamID == "AAAAA11111")
        #expect(try object(imported.json) == object(oldImport))
        // import_id as a JSON number (as the first release's reader also accepted), and no source team.
        let numeric = try TransferImportSpec.decode(#"{"team_id":"T","client_id":"c","import_id":7,"transfer_date":"2025-03-01"}"#)
        #expect(numeric.importID == 7 && numeric.sourceTeamID == nil)
        #expect(try object(numeric.json)["source_team_id"] == nil)
        let emptySource = try TransferImportSpec.decode(
            #"{"team_id":"T","client_id":"c","import_id":"7","transfer_date":"2025-03-01","source_team_id":""}"#)
        #expect(emptySource.sourceTeamID == nil)
    }

    @Test func errorsNameTheField() {
        func failure<S: JobSpec>(_ type: S.Type, _ json: String) -> String {
            do {
                _ = try S.decode(json)
                return "decoded"
            } catch {
                return error.description
            }
        }
        #expect(failure(TransferExportSpec.self, "{}") == "job spec field 'team_id' is missing from the job spec")
        #expect(failure(ClientJobSpec.self, #"{"team_id":"T","client_id":""}"#)
                == "job spec field 'client_id' is missing from the job spec")
        #expect(failure(TransferImportSpec.self, #"{"team_id":"T","client_id":"c","import_id":"x","transfer_date":"d"}"#)
                == "job spec field 'import_id' is not a number")
        #expect(failure(ClientJobSpec.self, "[1]") == "job spec field 'spec' is not a JSON object")
        #expect(failure(ClientJobSpec.self, #"{"team_id":1,"client_id":"c"}"#) == "job spec field 'team_id' is not a string")
        #expect(EmptyJobSpec().json == "{}")
    }
}
