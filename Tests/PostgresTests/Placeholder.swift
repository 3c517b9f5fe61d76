import Testing

@Test func placeholderPostgresTests() { #expect(Bool(true)) }
