import Foundation

/// Inline SVG charts for the dashboard: no script, no external resource. Every label is escaped
/// (`HTML`), and every shape carries `data-*` attributes with its value so tests (and a reader of
/// the source) can check what is drawn.
public enum SVGCharts {
    /// One bar of a chart: a label, a value, and a CSS colour.
    public struct Bar: Sendable {
        public var label: String
        public var value: Double
        public var color: String

        public init(_ label: String, _ value: Double, color: String = "#4a7bd0") {
            self.label = label
            self.value = value
            self.color = color
        }
    }

    /// A progress bar `done` of `total` (a job's terminal items), with its percentage as text.
    public static func progress(done: Int, total: Int, width: Int = 220) -> HTML {
        guard total > 0 else { return "<span class=\"empty\">no items</span>" }
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 0
        let filled = Int((Double(width) * fraction).rounded())
        let percent = String(format: "%.1f%%", fraction * 100)
        return """
            <svg class="progress" width="\(width)" height="14" role="img" aria-label="\(percent) done" data-done="\(done)" \
            data-total="\(total)"><rect width="\(width)" height="14" fill="#e4e7ec"/><rect width="\(filled)" height="14" \
            fill="#3c9a5f"/></svg> \(percent)
            """
    }

    /// Horizontal bars, one per entry, scaled to the largest; each row shows its label and value.
    public static func bars(_ bars: [Bar], id: String, width: Int = 560) -> HTML {
        guard !bars.isEmpty else { return "<p class=\"empty\">nothing to chart yet</p>" }
        let rowHeight = 22
        let labelWidth = 220
        let maximum = max(bars.map(\.value).max() ?? 0, 1)
        let rows: [HTML] = bars.enumerated().map { index, bar in
            let y = index * rowHeight
            let length = Int((Double(width - labelWidth - 70) * bar.value / maximum).rounded())
            return """
                <g class="bar" data-label="\(bar.label)" data-value="\(format(bar.value))"><text x="0" y="\(y + 15)">\(bar.label)</text>\
                <rect x="\(labelWidth)" y="\(y + 3)" width="\(max(length, 1))" height="16" fill="\(bar.color)"/>\
                <text x="\(labelWidth + max(length, 1) + 6)" y="\(y + 15)">\(format(bar.value))</text></g>
                """
        }
        return """
            <svg id="\(id)" class="chart" width="\(width)" height="\(bars.count * rowHeight + 4)" role="img">\(rows)</svg>
            """
    }

    /// One stacked column per day (oldest first): each series a colour, for e.g. valid and invalid
    /// verdicts per day; a legend below.
    public static func stackedColumns(days: [(String, [Double])], series: [(String, String)], id: String,
                                      height: Int = 180) -> HTML {
        guard !days.isEmpty else { return "<p class=\"empty\">nothing to chart yet</p>" }
        let column = 40
        let top = max(days.map { $0.1.reduce(0, +) }.max() ?? 0, 1)
        let plot = Double(height - 30)
        let columns: [HTML] = days.enumerated().map { index, day in
            var y = Double(height - 20)
            let segments: [HTML] = zip(day.1, series).map { value, s in
                let h = plot * value / top
                y -= h
                return """
                    <rect x="\(index * column + 4)" y="\(format(y))" width="\(column - 8)" height="\(format(h))" fill="\(s.1)" \
                    data-series="\(s.0)" data-value="\(format(value))"><title>\(day.0) \(s.0): \(format(value))</title></rect>
                    """
            }
            return """
                <g class="day" data-day="\(day.0)">\(segments)<text x="\(index * column + 4)" y="\(height - 6)" \
                font-size="10">\(String(day.0.suffix(5)))</text></g>
                """
        }
        let legend: [HTML] = series.map { "<span class=\"key\" style=\"background:\($0.1)\"></span>\($0.0) " }
        return """
            <svg id="\(id)" class="chart" width="\(max(days.count * column + 10, 200))" height="\(height)" role="img">\(columns)</svg>\
            <div class="legend">\(legend)</div>
            """
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(format: "%.1f", value)
    }
}
