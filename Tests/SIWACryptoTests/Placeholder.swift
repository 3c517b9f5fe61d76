import Testing

@Test func placeholderSIWACryptoTests() { #expect(Bool(true)) }
