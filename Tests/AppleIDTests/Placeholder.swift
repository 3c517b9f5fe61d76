import Testing

@Test func placeholderAppleIDTests() { #expect(Bool(true)) }
