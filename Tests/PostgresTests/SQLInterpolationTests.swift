import Postgres
import Testing

@Suite struct SQLInterpolationTests {
    @Test func interpolatedValuesBecomeNumberedBinds() {
        let name: String? = nil
        let sql: SQL = "SELECT * FROM t WHERE a = \(42) AND b = \("x'y") AND c IS NOT DISTINCT FROM \(name) AND d = \(true)"
        #expect(sql.text == "SELECT * FROM t WHERE a = $1 AND b = $2 AND c IS NOT DISTINCT FROM $3 AND d = $4")
        #expect(sql.binds == ["42", "x'y", nil, "t"])
    }

    @Test func unsafeFragmentsAndIdentifiersAreVerbatim() {
        let sql: SQL = "SELECT \(unsafeSQL: "count(*)") FROM \(identifier: "my\"table") WHERE x = \(1)"
        #expect(sql.text == "SELECT count(*) FROM \"my\"\"table\" WHERE x = $1")
        #expect(sql.binds == ["1"])
        #expect(SQL(unsafeSQL: "SELECT '$1'").binds.isEmpty)
    }

    @Test func splicedSQLIsRenumbered() {
        let inner: SQL = "x = \(5) AND y = \("six")"
        let outer: SQL = "SELECT \(1) WHERE \(inner) AND z = \(7)"
        #expect(outer.text == "SELECT $1 WHERE x = $2 AND y = $3 AND z = $4")
        #expect(outer.binds == ["1", "5", "six", "7"])
    }

    @Test func plusRenumbersTheRightHandSide() {
        let lhs: SQL = "UPDATE t SET a = \(1), b = \(2)"
        let rhs: SQL = " WHERE id = \(3) AND note = '$1 stays'"
        let sql = lhs + rhs
        #expect(sql.text == "UPDATE t SET a = $1, b = $2 WHERE id = $3 AND note = '$1 stays'")
        #expect(sql.binds == ["1", "2", "3"])
    }

    @Test func multiDigitPlaceholdersAndNestedSplicesRenumber() {
        var inner: SQL = "VALUES "
        for index in 0..<12 {
            inner += index == 0 ? "(\(index))" : ", (\(index))"
        }
        #expect(inner.text.hasSuffix("($11), ($12)"))
        let middle: SQL = "\(inner) -- \(100)"
        let outer: SQL = "SELECT \(-1), \(-2), \(-3); \(middle) \(middle)"
        #expect(outer.binds.count == 3 + 13 * 2)
        #expect(outer.text.hasPrefix("SELECT $1, $2, $3; VALUES ($4), ($5)"))
        #expect(outer.text.contains("($15) -- $16 VALUES ($17)"))
        #expect(outer.text.hasSuffix("($28) -- $29"))
        #expect(outer.binds[3] == "0" && outer.binds[15] == "100" && outer.binds[28] == "100")
    }

    @Test func interpolatedArraysAreSingleBinds() {
        let ids: [Int64] = [1, 2, 3]
        let sql: SQL = "SELECT * FROM t WHERE id = ANY(\(ids))"
        #expect(sql.text == "SELECT * FROM t WHERE id = ANY($1)")
        #expect(sql.binds == ["{1,2,3}"])
    }
}
