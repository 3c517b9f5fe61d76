import AppleID
import Foundation
import Metrics
import SIWAJobs
import Testing
import TestSupport

/// The exposition text, the lock-free counters, the Apple call counting and the dashboard's
/// escaping, in process (the promtool and browser checks are in IntegrationTests).
@Suite struct MetricsRenderingTests {
    @Test func familiesRenderWithHelpTypeAndEscapedLabels() {
        let text = PrometheusText.render([
            MetricFamily("x_total", .counter, help: "a\\b\nc", samples: [.init(labels: [("kind", "a\"b\\c\nd")], value: 3)]),
            .single("y", .gauge, help: "y", value: 0.25),
            MetricFamily("x_total", .counter, help: "ignored", samples: [.init(labels: [("kind", "e")], value: 1)]),
        ])
        #expect(text == """
            # HELP x_total a\\\\b\\nc
            # TYPE x_total counter
            x_total{kind="a\\"b\\\\c\\nd"} 3
            x_total{kind="e"} 1
            # HELP y y
            # TYPE y gauge
            y 0.25

            """)
        #expect(PrometheusText.format(.infinity) == "+Inf")
        #expect(PrometheusText.format(.nan) == "NaN")
    }

    @Test func histogramBucketsAreCumulative() {
        let h = LatencyHistogram(bounds: [0.1, 1])
        h.observe(.milliseconds(50))
        h.observe(.milliseconds(500))
        h.observe(.seconds(3))
        let samples = h.samples(labels: [("endpoint", "token")])
        #expect(samples.map(\.value) == [1, 2, 3, 3.55, 3])
        #expect(samples.map(\.suffix) == ["_bucket", "_bucket", "_bucket", "_sum", "_count"])
        #expect(samples[2].labels.last?.1 == "+Inf")
    }

    @Test func appleCallsAreCountedByEndpointAndStatus() async throws {
        let transport = ScriptedTransport(script: [
            .success(HTTPResponse(status: 200)), .success(HTTPResponse(status: 400)),
            .failure(TransportError(kind: .timeout, message: "t")), .success(HTTPResponse(status: 418)),
        ])
        let metrics = AppleCallMetrics()
        let instrumented = metrics.instrument(transport)
        _ = try await instrumented.send(HTTPRequest(method: "POST", url: "https://appleid.apple.com/auth/token"))
        _ = try await instrumented.send(HTTPRequest(method: "POST", url: "https://appleid.apple.com/auth/revoke?x=1"))
        await #expect(throws: TransportError.self) {
            _ = try await instrumented.send(HTTPRequest(method: "POST", url: "https://appleid.apple.com/auth/token"))
        }
        _ = try await instrumented.send(HTTPRequest(url: "https://appleid.apple.com/auth/keys"))
        #expect(metrics.calls(endpoint: "token", status: "200") == 1)
        #expect(metrics.calls(endpoint: "revoke", status: "400") == 1)
        #expect(metrics.calls(endpoint: "token", status: "timeout") == 1)
        #expect(metrics.calls(endpoint: "keys", status: "other") == 1)
        let text = PrometheusText.render(metrics.families)
        #expect(text.contains(#"siwa_apple_calls_total{endpoint="token",status="timeout"} 1"#))
        #expect(text.contains(#"siwa_apple_call_duration_seconds_count{endpoint="token"} 2"#))
        #expect(!text.contains("x=1"))
    }

    /// Every HTTP status counted by value lands under its own label (the numeric lookup agrees
    /// with the label list), and any other under `other`.
    @Test func everyCountedStatusHasItsOwnLabel() async throws {
        let numeric = AppleCallMetrics.statuses.compactMap { Int($0) }
        #expect(numeric == [200, 400, 401, 403, 404, 429, 500, 502, 503, 504])
        let transport = ScriptedTransport(script: (numeric + [201, 302, 599]).map { .success(HTTPResponse(status: $0)) })
        let metrics = AppleCallMetrics()
        let instrumented = metrics.instrument(transport)
        for _ in 0..<(numeric.count + 3) {
            _ = try await instrumented.send(HTTPRequest(method: "POST", url: "https://appleid.apple.com/auth/token"))
        }
        for status in numeric { #expect(metrics.calls(endpoint: "token", status: String(status)) == 1, "\(status)") }
        #expect(metrics.calls(endpoint: "token", status: "other") == 3)
    }

    @Test func textFileIsReplacedAtomically() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("siwa.prom").path
        try MetricsTextFile.write("a 1\n", to: path)
        try MetricsTextFile.write("a 2\n", to: path)
        #expect(MetricsTextFile.read(path) == "a 2\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["siwa.prom"])   // no temporary left
        #expect(throws: MetricsFileError.self) { try MetricsTextFile.write("a 1\n", to: dir.appendingPathComponent("no/such/dir.prom").path) }
    }

    @Test func htmlInterpolationEscapesValues() {
        let id = "<script>document.title='x'</script>\"&"
        let html: HTML = "<td title=\"\(id)\">\(id)</td>\("<b>ok</b>" as HTML)"
        #expect(html.markup == "<td title=\"&lt;script&gt;document.title=&#39;x&#39;&lt;/script&gt;&quot;&amp;\">"
            + "&lt;script&gt;document.title=&#39;x&#39;&lt;/script&gt;&quot;&amp;</td><b>ok</b>")
        let chart = SVGCharts.bars([SVGCharts.Bar("<img src=x>", 3)], id: "c")
        #expect(chart.markup.contains("data-label=\"&lt;img src=x&gt;\""))
        #expect(!chart.markup.contains("<img"))
    }
}
