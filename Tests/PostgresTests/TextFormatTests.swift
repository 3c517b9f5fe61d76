import Foundation
import Postgres
import Testing

/// Encoders and decoders without a server.
@Suite struct TextFormatTests {
    @Test func scalarsEncodeToPostgresInputText() {
        #expect(true.postgresText == "t")
        #expect(false.postgresText == "f")
        #expect(Int64.min.postgresText == "-9223372036854775808")
        #expect(Double.nan.postgresText == "NaN")
        #expect((-Double.infinity).postgresText == "-Infinity")
        #expect((Optional<Int>.none).postgresText == nil)
        #expect([UInt8]([0x00, 0xFF, 0x10]).postgresText == "\\x00ff10")
        #expect([UInt8]().postgresText == "\\x")
    }

    @Test func datesEncodeAsUTCWithMicroseconds() {
        #expect(Date(timeIntervalSince1970: 1_796_007_845.123456).postgresText == "2026-11-30T03:04:05.123456Z")
        #expect(Date(timeIntervalSince1970: 0).postgresText == "1970-01-01T00:00:00.000000Z")
        #expect(Date(timeIntervalSince1970: -2_208_988_800).postgresText == "1900-01-01T00:00:00.000000Z")
        #expect(Date(timeIntervalSince1970: -0.5).postgresText == "1969-12-31T23:59:59.500000Z")
    }

    @Test func arraysQuoteWhatNeedsQuoting() {
        let values = ["plain", "", "NULL", "null", "a,b", "q\"uote", "back\\slash", "{br}", " lead", "tab\there", "ünï"]
        #expect(values.postgresText == #"{plain,"","NULL","null","a,b","q\"uote","back\\slash","{br}"," lead","tab\#there",ünï}"#)
        let optionals: [String?] = ["a", nil, "NULL"]
        #expect(optionals.postgresText == #"{a,NULL,"NULL"}"#)
        #expect([Int]().postgresText == "{}")
        #expect([true, false].postgresText == "{t,f}")
        #expect([1.5, -Double.infinity].postgresText == "{1.5,-Infinity}")
    }

    @Test func arrayLiteralsRoundTripThroughTheDecoder() throws {
        let values: [String?] = ["plain", "", "NULL", nil, "a,b", "q\"uote", "back\\slash", "{br}", " lead ", "x\ny", "日本"]
        let text = try #require(values.postgresText)
        #expect(try [String?](postgresText: text) == values)
        #expect(try [Int](postgresText: "{1, 2 ,3}") == [1, 2, 3])
        #expect(try [Int](postgresText: "[0:1]={7,8}") == [7, 8])
        #expect(try [String](postgresText: "{}") == [])
    }

    @Test func malformedOrNullArraysFailToDecode() {
        #expect(throws: DatabaseError.self) { try [Int](postgresText: "{1,NULL}") }
        #expect(throws: DatabaseError.self) { try [Int](postgresText: "{1,2") }
        #expect(throws: DatabaseError.self) { try [Int](postgresText: "{{1,2},{3,4}}") }
        #expect(throws: DatabaseError.self) { try [String](postgresText: #"{"abc}"#) }
    }

    @Test(arguments: [
        ("2026-11-30 03:04:05+00", 1_796_007_845.0),
        ("2026-11-30 03:04:05.123456+00", 1_796_007_845.123456),
        ("2026-11-30T03:04:05.5Z", 1_796_007_845.5),
        ("2026-11-30 08:34:05.25+05:30", 1_796_007_845.25),
        ("2026-11-29 23:34:05-03:30", 1_796_007_845.0),
        ("2026-11-30 03:23:37+00:19:32", 1_796_007_845.0),
        ("2026-11-30 03:04:05", 1_796_007_845.0),
        ("2026-11-30", 1_795_996_800.0),
        ("1969-12-31 23:59:59.5+00", -0.5),
    ])
    func timestampsParseInEveryISOForm(text: String, expected: Double) throws {
        let date = try Date(postgresText: text)
        #expect(abs(date.timeIntervalSince1970 - expected) < 0.000_001)
    }

    @Test func specialAndInvalidTimestamps() throws {
        #expect(try Date(postgresText: "infinity") == .distantFuture)
        #expect(try Date(postgresText: "-infinity") == .distantPast)
        let bc = try Date(postgresText: "0044-03-15 12:00:00+00 BC")
        #expect(bc.postgresText == "0044-03-15T12:00:00.000000Z BC")
        for bad in ["", "2026-13-01", "2026-11-30 25:00", "2026-11-30 03:04:05 +00", "yesterday", "2026-11-30 03:04:05.+00"] {
            #expect(throws: DatabaseError.self) { try Date(postgresText: bad) }
        }
    }

    @Test func scalarDecodersRejectGarbageWithoutEchoingIt() {
        #expect(throws: DatabaseError.self) { try Int(postgresText: "12x") }
        #expect(throws: DatabaseError.self) { try Bool(postgresText: "yes") }
        #expect(throws: DatabaseError.self) { try [UInt8](postgresText: "\\x0g") }
        do {
            _ = try UUID(postgresText: "secret-looking-value")
            Issue.record("expected a decoding error")
        } catch {
            #expect(error.kind == .decoding)
            #expect(!error.description.contains("secret-looking-value"))
        }
    }
}
