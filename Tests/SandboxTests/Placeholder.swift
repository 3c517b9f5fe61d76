import Testing

@Test func placeholderSandboxTests() { #expect(Bool(true)) }
