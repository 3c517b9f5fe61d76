import Foundation

/// One metric family in the Prometheus text exposition format (version 0.0.4,
/// https://prometheus.io/docs/instrumenting/exposition_formats/): a `# HELP` line, a `# TYPE`
/// line, then its samples. Label values are escaped as the format requires (`\\`, `\"`, `\n`);
/// callers never put a secret, `sub`, email or fingerprint in a label.
public struct MetricFamily: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable {
        case counter, gauge, histogram
    }

    /// One sample line: `name{labels} value`, where `name` is the family's name plus `suffix`
    /// (`_bucket`, `_sum`, `_count` for histograms; empty otherwise).
    public struct Sample: Sendable, Equatable {
        public var suffix: String
        public var labels: [(String, String)]
        public var value: Double

        public init(suffix: String = "", labels: [(String, String)] = [], value: Double) {
            self.suffix = suffix
            self.labels = labels
            self.value = value
        }

        public static func == (a: Sample, b: Sample) -> Bool {
            a.suffix == b.suffix && a.value == b.value && a.labels.map(\.0) == b.labels.map(\.0)
                && a.labels.map(\.1) == b.labels.map(\.1)
        }
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`, e.g. `siwa_jobs_items_total`.
    public var name: String
    public var help: String
    public var kind: Kind
    public var samples: [Sample]

    public init(_ name: String, _ kind: Kind, help: String, samples: [Sample] = []) {
        self.name = name
        self.kind = kind
        self.help = help
        self.samples = samples
    }

    /// A family with one unlabelled sample.
    public static func single(_ name: String, _ kind: Kind, help: String, value: Double) -> MetricFamily {
        MetricFamily(name, kind, help: help, samples: [Sample(value: value)])
    }
}

/// Renders metric families as the Prometheus text exposition format.
public enum PrometheusText {
    /// The `Content-Type` of a `/metrics` answer.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The families in order, each with its HELP and TYPE lines; families with the same name are
    /// merged into the first (a family appears once). Ends with a newline.
    public static func render(_ families: [MetricFamily]) -> String {
        var merged: [MetricFamily] = []
        var index: [String: Int] = [:]
        for family in families {
            if let at = index[family.name] {
                merged[at].samples += family.samples
            } else {
                index[family.name] = merged.count
                merged.append(family)
            }
        }
        var out = ""
        for family in merged {
            out += "# HELP \(family.name) \(escapeHelp(family.help))\n"
            out += "# TYPE \(family.name) \(family.kind.rawValue)\n"
            for sample in family.samples {
                out += family.name + sample.suffix
                if !sample.labels.isEmpty {
                    out += "{" + sample.labels.map { "\($0.0)=\"\(escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
                }
                out += " " + format(sample.value) + "\n"
            }
        }
        return out
    }

    /// A sample value: integers without a fraction, `+Inf`, `-Inf`, `NaN` as the format spells them.
    public static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// A label value with `\`, `"` and line feeds escaped.
    public static func escapeLabel(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    /// HELP text with `\` and line feeds escaped.
    static func escapeHelp(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }
}
