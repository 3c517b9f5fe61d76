import Foundation
import Postgres
import Testing

/// Every encodable/decodable type through a real server and back.
@Suite struct RoundTripTests {
    static let trickyStrings = [
        "plain", "", "it's", "\"double\"", "back\\slash", "\\x00", "tab\tnew\nline", "NULL", "null",
        "a,b", "{braces}", "  spaced  ", "emoji 🚀 and ünïcödé 日本語", "$1", "'); DROP TABLE x; --",
    ]

    @Test func stringsSurviveTextBindsAndArrays() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        for value in Self.trickyStrings {
            let row = try #require(try await connection.query("SELECT \(value)::text AS v, length(\(value)) AS n").first)
            #expect(try row.decode("v", as: String.self) == value)
            #expect(try row.decode("n", as: Int.self) == value.count)
        }
        let rows = try await connection.query("SELECT \(Self.trickyStrings)::text[] AS a, cardinality(\(Self.trickyStrings)::text[]) AS n")
        #expect(try rows[0].decode("a", as: [String].self) == Self.trickyStrings)
        #expect(try rows[0].decode("n", as: Int.self) == Self.trickyStrings.count)

        let optionals: [String?] = ["x", nil, "NULL", "", nil]
        let back = try await connection.query("SELECT \(optionals)::text[] AS a, array_position(\(optionals)::text[], NULL) AS firstnull")
        #expect(try back[0].decode("a", as: [String?].self) == optionals)
        #expect(try back[0].decode("firstnull", as: Int.self) == 2)
    }

    @Test func numbersBoolsAndNulls() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        let nothing: Int? = nil
        let row = try #require(try await connection.query("""
            SELECT \(Int.max)::bigint AS big, \(Int64.min)::bigint AS small, \(Int32.max)::int AS i32,
                   \(Int16.min)::smallint AS i16, \(3.25)::float8 AS d, \(Double.nan)::float8 AS nan,
                   \(-Double.infinity)::float8 AS neginf, \(1e-300)::float8 AS tiny,
                   \(true)::bool AS t, \(false)::bool AS f, \(nothing)::int AS missing
            """).first)
        #expect(try row.decode("big", as: Int.self) == Int.max)
        #expect(try row.decode("small", as: Int64.self) == Int64.min)
        #expect(try row.decode("i32", as: Int32.self) == Int32.max)
        #expect(try row.decode("i16", as: Int16.self) == Int16.min)
        #expect(try row.decode("d", as: Double.self) == 3.25)
        #expect(try row.decode("nan", as: Double.self).isNaN)
        #expect(try row.decode("neginf", as: Double.self) == -.infinity)
        #expect(try row.decode("tiny", as: Double.self) == 1e-300)
        #expect(try row.decode("t", as: Bool.self))
        #expect(try !row.decode("f", as: Bool.self))
        #expect(row.isNull("missing") && row["missing"] == nil)
        #expect(try row.decode("missing", as: Int?.self) == nil)
        let optionalBig: Int? = try row.decode("big")
        #expect(optionalBig == Int.max)
        let inferredOptional: Int? = try row.decode("missing")  // picks the Optional overload: no throw
        #expect(inferredOptional == nil)

        let arrays = try #require(try await connection.query("""
            SELECT \([1, -2, 3])::bigint[] AS ints, \([0.5, -1.25])::float8[] AS doubles,
                   \([true, false])::bool[] AS bools, \([Int64]())::bigint[] AS empty
            """).first)
        #expect(try arrays.decode("ints", as: [Int].self) == [1, -2, 3])
        #expect(try arrays.decode("doubles", as: [Double].self) == [0.5, -1.25])
        #expect(try arrays.decode("bools", as: [Bool].self) == [true, false])
        #expect(try arrays.decode("empty", as: [Int64].self) == [])

        // Integer arrays are written digit by digit: the extremes, zero and signs survive.
        let extremes: [Int64] = [Int64.min, -1, 0, 7, 1_000_000, Int64.max]
        let small: [Int32] = [Int32.min, 0, Int32.max]
        let ints = try #require(try await connection.query("""
            SELECT \(extremes)::bigint[] AS big, \(extremes)::bigint[]::text AS text, \(small)::int[] AS small,
                   \([Int](repeating: 42, count: 3))::int[]::text AS plain
            """).first)
        #expect(try ints.decode("big", as: [Int64].self) == extremes)
        #expect(try ints.decode("text", as: String.self) == "{-9223372036854775808,-1,0,7,1000000,9223372036854775807}")
        #expect(try ints.decode("small", as: [Int32].self) == small)
        #expect(try ints.decode("plain", as: String.self) == "{42,42,42}")
    }

    @Test func byteaAndUUID() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        let bytes = (0...255).map { UInt8($0) } + [0, 0, 92, 120]
        let id = UUID()
        let row = try #require(try await connection.query("""
            SELECT \(bytes)::bytea AS b, length(\(bytes)::bytea) AS n, \(id)::uuid AS u, \([UInt8]())::bytea AS e
            """).first)
        #expect(try row.decode("b", as: [UInt8].self) == bytes)
        #expect(try row.decode("n", as: Int.self) == bytes.count)
        #expect(try row.decode("u", as: UUID.self) == id)
        #expect(try row.decode("e", as: [UInt8].self) == [])
    }

    @Test(arguments: ["UTC", "Asia/Kolkata", "America/St_Johns", "Europe/Amsterdam"])
    func datesRoundTripInAnySessionTimeZone(zone: String) async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        try await connection.simpleQuery(unsafeSQL: "SET TIME ZONE '\(zone)'")
        let dates = [
            Date(timeIntervalSince1970: 1_796_007_845.123456),
            Date(timeIntervalSince1970: 1_796_007_845),
            Date(timeIntervalSince1970: -2_208_988_800.5),  // 1900: Amsterdam was +00:19:32
            Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1_000_000).rounded() / 1_000_000),
        ]
        for date in dates {
            let row = try #require(try await connection.query("SELECT \(date)::timestamptz AS ts").first)
            let back = try row.decode("ts", as: Date.self)
            #expect(abs(back.timeIntervalSince1970 - date.timeIntervalSince1970) < 0.000_002, "\(zone): \(row["ts"] ?? "")")
        }
        let array = try #require(try await connection.query("SELECT \(dates)::timestamptz[] AS a").first)
        let decoded = try array.decode("a", as: [Date].self)
        #expect(decoded.count == dates.count)
        for (lhs, rhs) in zip(decoded, dates) { #expect(abs(lhs.timeIntervalSince1970 - rhs.timeIntervalSince1970) < 0.000_002) }
        let special = try #require(try await connection.query("SELECT 'infinity'::timestamptz AS inf, now() AS now").first)
        #expect(try special.decode("inf", as: Date.self) == .distantFuture)
        #expect(abs(try special.decode("now", as: Date.self).timeIntervalSinceNow) < 300)
    }

    @Test func largeArraysAndManyBinds() async throws {
        let connection = try await TestDatabase.connect()
        defer { connection.close() }
        try await connection.simpleQuery(unsafeSQL: """
            CREATE TEMP TABLE big (id bigint PRIMARY KEY, label text);
            INSERT INTO big SELECT g, 'row ' || g FROM generate_series(1, 10000) g;
            """)
        let ids = (1...5000).map { Int64($0 * 2) }
        let count = try await connection.query("SELECT count(*) AS n FROM big WHERE id = ANY(\(ids))")
        #expect(try count[0].decode("n", as: Int.self) == 5000)

        let newIDs = (20_001...25_000).map { Int64($0) }
        let labels = newIDs.map { "label, \"\($0)\" {x}" }
        let inserted = try await connection.execute("""
            INSERT INTO big (id, label) SELECT * FROM unnest(\(newIDs)::bigint[], \(labels)::text[])
            """)
        #expect(inserted == 5000)
        let check = try await connection.query("SELECT label FROM big WHERE id = \(Int64(20_001))")
        #expect(try check[0].decode("label", as: String.self) == "label, \"20001\" {x}")

        var sql: SQL = "SELECT "
        for index in 1...20 { sql += index == 1 ? "\(index)::int AS c\(unsafeSQL: String(index))" : ", \(index)::int AS c\(unsafeSQL: String(index))" }
        let row = try #require(try await connection.query(sql).first)
        #expect(sql.binds.count == 20)
        for index in 1...20 { #expect(try row.decode("c\(index)", as: Int.self) == index) }
    }

    @Test func configurationDefaultsAndOverrides() async throws {
        let connection = try await TestDatabase.connect(applicationName: "siwa-app-name-check")
        defer { connection.close() }
        let row = try await connection.query("SELECT current_setting('application_name') AS app")
        #expect(try row[0].decode("app", as: String.self) == "siwa-app-name-check")
        #expect(connection.backendPID > 0)

        var configuration = TestDatabase.configuration()
        if configuration.conninfo.contains("://") {
            configuration.conninfo += configuration.conninfo.contains("?") ? "&" : "?"
            configuration.conninfo += "application_name=from_conninfo"
        } else {
            configuration.conninfo += " application_name=from_conninfo"
        }
        let overridden = try await PostgresConnection.connect(configuration)
        defer { overridden.close() }
        let app = try await overridden.query("SELECT current_setting('application_name') AS app")
        #expect(try app[0].decode("app", as: String.self) == "from_conninfo")
    }
}
