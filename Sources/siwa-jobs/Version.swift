/// This binary's version: written into the worker registry by every `work` and
/// `notifications serve` process, listed by `siwa-jobs workers`, and compared by `doctor`, which
/// warns about live workers running another one. Raise it with every release (and with any change
/// that workers of two builds must not mix).
enum Version {
    static let current = "0.9.0"
}
