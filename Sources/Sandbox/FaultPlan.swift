import Foundation
import Synchronization

/// A fault the sandbox can inject instead of (or before) a normal answer.
enum FaultKind: String, CaseIterable, Sendable {
    case tooManyRequests = "429"
    case serverError = "500"
    case serviceUnavailable = "503"
    case html
    /// A 400 whose body is an HTML page (an edge refusing the request), not Apple's JSON error.
    case html400 = "html_400"
    /// A 200 JSON token answer without `access_token` (Apple's TokenResponse lists it; seen absent).
    case noAccessToken = "no_access_token"
    case reset
    case stall
    case truncated
    case invalidClient = "invalid_client"
    /// Scripted only: answer normally (lets the next N requests through before later scripted faults).
    case pass
}

/// SplitMix64: tiny, fast, good enough for fault dice; deterministic for a given seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// Uniform in `[0, 1)`.
    mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }
}

/// What to do with one Apple-endpoint request.
struct FaultDecision {
    var fault: FaultKind?
    /// Delay before answering, milliseconds (latency plus any stall).
    var delayMs: Double
    var retryAfterSeconds: Int
}

/// Runtime-adjustable latency, random fault rates and scripted faults. Thread-safe.
final class FaultPlan: Sendable {
    struct Scripted { var kind: FaultKind; var remaining: Int; var retryAfter: Int?; var stallSeconds: Double? }

    struct State {
        var latency: LatencyDistribution
        var rates: FaultRates
        var scripted: [Scripted] = []
        var rng: SplitMix64
    }

    let state: Mutex<State>

    init(latency: LatencyDistribution, rates: FaultRates, seed: UInt64?) {
        var system = SystemRandomNumberGenerator()
        state = Mutex(State(latency: latency, rates: rates, rng: SplitMix64(state: seed ?? system.next())))
    }

    /// Queues `count` scripted faults, consumed by the next Apple-endpoint requests in order.
    func script(_ kind: FaultKind, count: Int, retryAfter: Int?, stallSeconds: Double?) {
        state.withLock { $0.scripted.append(Scripted(kind: kind, remaining: count, retryAfter: retryAfter, stallSeconds: stallSeconds)) }
    }

    func clearScripted() { state.withLock { $0.scripted.removeAll() } }

    func setLatency(_ latency: LatencyDistribution) { state.withLock { $0.latency = latency } }

    func setRates(_ rates: FaultRates) { state.withLock { $0.rates = rates } }

    var latency: LatencyDistribution { state.withLock { $0.latency } }
    var rates: FaultRates { state.withLock { $0.rates } }
    var scriptedRemaining: Int { state.withLock { $0.scripted.reduce(0) { $0 + $1.remaining } } }

    /// Rolls the dice for one request: scripted faults first, then random rates, then latency.
    func decide() -> FaultDecision {
        state.withLock { s in
            var decision = FaultDecision(fault: nil, delayMs: 0, retryAfterSeconds: s.rates.retryAfterSeconds)
            var stallSeconds = s.rates.stallSeconds
            if !s.scripted.isEmpty {
                let head = s.scripted[0]
                decision.fault = head.kind == .pass ? nil : head.kind
                if let r = head.retryAfter { decision.retryAfterSeconds = r }
                if let st = head.stallSeconds { stallSeconds = st }
                if head.remaining <= 1 { s.scripted.removeFirst() } else { s.scripted[0].remaining -= 1 }
            } else if s.rates.total > 0 {
                decision.fault = Self.pick(s.rates, roll: s.rng.unit(), coin: s.rng.next())
            }
            decision.delayMs = Self.sample(s.latency, rng: &s.rng)
            if decision.fault == .stall { decision.delayMs += stallSeconds * 1000 }
            return decision
        }
    }

    private static func pick(_ r: FaultRates, roll: Double, coin: UInt64) -> FaultKind? {
        var edge = r.serverError
        if roll < edge { return coin & 1 == 0 ? .serverError : .serviceUnavailable }
        edge += r.tooManyRequests
        if roll < edge { return .tooManyRequests }
        edge += r.connectionReset
        if roll < edge { return .reset }
        edge += r.stall
        if roll < edge { return .stall }
        edge += r.htmlError
        if roll < edge { return .html }
        edge += r.truncatedJSON
        if roll < edge { return .truncated }
        return nil
    }

    /// One latency sample in milliseconds, clamped at 0.
    static func sample(_ latency: LatencyDistribution, rng: inout SplitMix64) -> Double {
        switch latency {
        case .none:
            return 0
        case .fixed(let ms):
            return max(0, ms)
        case .uniform(let lo, let hi):
            return max(0, lo + (hi - lo) * rng.unit())
        case .normal(let mean, let sd):
            // Box-Muller; 1 - unit() is in (0, 1], so the log is finite.
            let u1 = 1 - rng.unit(), u2 = rng.unit()
            let z = (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
            return max(0, mean + sd * z)
        }
    }
}
