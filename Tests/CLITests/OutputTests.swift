import Testing
@testable import siwa_jobs

/// Counts in the CLI's summary lines read as English: "1 error", "2 errors", "0 rows".
@Suite struct OutputTests {
    @Test func countsArePluralUnlessOne() {
        #expect(counted(1, "error") == "1 error")
        #expect(counted(2, "error") == "2 errors")
        #expect(counted(0, "row") == "0 rows")
        #expect(counted(Int64(1), "row") == "1 row")
    }
}
