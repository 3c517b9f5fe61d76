import Foundation
import MicroHTTP

extension AdminEndpoints {
    private struct FaultsIn: Decodable {
        struct Rates: Decodable {
            var server_error: Double?
            var too_many_requests: Double?
            var connection_reset: Double?
            var stall: Double?
            var html_error: Double?
            var truncated_json: Double?
        }
        var next: Int?
        var kind: String?
        var retry_after: Int?
        var stall_seconds: Double?
        var clear: Bool?
        var rates: Rates?
    }

    /// `POST /__sandbox/faults`: `{"next":N,"kind":K,"retry_after":S,"stall_seconds":S}` scripts the next N
    /// Apple-endpoint requests; `"clear":true` drops queued scripted faults; `"rates":{...}` replaces the
    /// random fault probabilities (`server_error`, `too_many_requests`, `connection_reset`, `stall`,
    /// `html_error`, `truncated_json`, each 0...1). `retry_after`/`stall_seconds` without `next` set the defaults.
    func faults(_ body: [UInt8]) throws -> HTTPServerResponse {
        let f = try AdminJSON.decode(FaultsIn.self, body)
        if f.clear == true { plan.clearScripted() }
        var rates = plan.rates
        if let r = f.rates {
            func prob(_ v: Double?, _ name: String, _ current: Double) throws -> Double {
                guard let v else { return current }
                guard v.isFinite, (0...1).contains(v) else {
                    throw SandboxAdminError(field: "rates.\(name)", reason: "expected a probability between 0 and 1")
                }
                return v
            }
            rates.serverError = try prob(r.server_error, "server_error", rates.serverError)
            rates.tooManyRequests = try prob(r.too_many_requests, "too_many_requests", rates.tooManyRequests)
            rates.connectionReset = try prob(r.connection_reset, "connection_reset", rates.connectionReset)
            rates.stall = try prob(r.stall, "stall", rates.stall)
            rates.htmlError = try prob(r.html_error, "html_error", rates.htmlError)
            rates.truncatedJSON = try prob(r.truncated_json, "truncated_json", rates.truncatedJSON)
            guard rates.total <= 1.000_000_1 else {
                throw SandboxAdminError(field: "rates", reason: "probabilities must sum to at most 1")
            }
        }
        if let s = f.retry_after, s < 0 { throw SandboxAdminError(field: "retry_after", reason: "must be >= 0") }
        if let s = f.stall_seconds, !(s >= 0 && s <= 3600) {
            throw SandboxAdminError(field: "stall_seconds", reason: "expected seconds in 0...3600")
        }
        if let next = f.next {
            guard next >= 0 else { throw SandboxAdminError(field: "next", reason: "must be >= 0") }
            guard let name = f.kind, let kind = FaultKind(rawValue: name) else {
                let kinds = FaultKind.allCases.map(\.rawValue).joined(separator: ", ")
                throw SandboxAdminError(field: "kind", reason: "expected one of \(kinds)")
            }
            if next > 0 { plan.script(kind, count: next, retryAfter: f.retry_after, stallSeconds: f.stall_seconds) }
        } else {
            if let s = f.retry_after { rates.retryAfterSeconds = s }
            if let s = f.stall_seconds { rates.stallSeconds = s }
        }
        plan.setRates(rates)
        return .adminJSON("{\"scripted_remaining\":\(plan.scriptedRemaining)}")
    }

    private struct LatencyIn: Decodable {
        var fixed_ms: Double?
        var min_ms: Double?
        var max_ms: Double?
        var mean_ms: Double?
        var stddev_ms: Double?
    }

    /// `POST /__sandbox/latency`: `{"fixed_ms":N}`, `{"min_ms":A,"max_ms":B}` (uniform),
    /// `{"mean_ms":M,"stddev_ms":S}` (normal), or `{}` for none. Milliseconds, each in 0...600000.
    func latency(_ body: [UInt8]) throws -> HTTPServerResponse {
        let l = try AdminJSON.decode(LatencyIn.self, body)
        func ms(_ v: Double, _ name: String) throws -> Double {
            guard v.isFinite, (0...600_000).contains(v) else {
                throw SandboxAdminError(field: name, reason: "expected milliseconds in 0...600000")
            }
            return v
        }
        let dist: LatencyDistribution
        if let f = l.fixed_ms {
            let v = try ms(f, "fixed_ms")
            dist = v > 0 ? .fixed(v) : .none
        } else if l.min_ms != nil || l.max_ms != nil {
            guard let lo = l.min_ms, let hi = l.max_ms else {
                throw SandboxAdminError(field: l.min_ms == nil ? "min_ms" : "max_ms", reason: "required with its pair")
            }
            let a = try ms(lo, "min_ms"), b = try ms(hi, "max_ms")
            guard a <= b else { throw SandboxAdminError(field: "min_ms", reason: "must not exceed max_ms") }
            dist = .uniform(a, b)
        } else if l.mean_ms != nil || l.stddev_ms != nil {
            guard let m = l.mean_ms, let s = l.stddev_ms else {
                throw SandboxAdminError(field: l.mean_ms == nil ? "mean_ms" : "stddev_ms", reason: "required with its pair")
            }
            dist = .normal(try ms(m, "mean_ms"), try ms(s, "stddev_ms"))
        } else {
            dist = .none
        }
        plan.setLatency(dist)
        return .adminJSON("{\"ok\":true}")
    }
}

/// JSON decoding for admin bodies with error messages that name the field.
enum AdminJSON {
    static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8]) throws -> T {
        guard !body.isEmpty else { throw SandboxAdminError(field: "body", reason: "expected a JSON object") }
        return try JSONDecoder().decode(type, from: Data(body))
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            var out = ""
            for k in keys {
                if let i = k.intValue { out += "[\(i)]" } else { out += out.isEmpty ? k.stringValue : "." + k.stringValue }
            }
            return out.isEmpty ? "body" : out
        }
        switch error {
        case .keyNotFound(let key, let ctx):
            return "\(path(ctx.codingPath + [key])): required"
        case .typeMismatch(let type, let ctx):
            return "\(path(ctx.codingPath)): expected \(type)"
        case .valueNotFound(let type, let ctx):
            return "\(path(ctx.codingPath)): expected \(type), found null"
        case .dataCorrupted(let ctx):
            return "\(path(ctx.codingPath)): not valid JSON"
        @unknown default:
            return "body: not valid JSON"
        }
    }
}
