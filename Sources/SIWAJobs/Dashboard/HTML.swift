/// A fragment of HTML whose interpolated values are escaped: in `"<td>\(name)</td>"` the literal
/// parts are markup and `name` is text (`&`, `<`, `>`, `"`, `'` become entities), so a value from
/// the database can never open a tag or leave an attribute. Only another `HTML` value is inserted
/// as markup. The same idea as `SQL`'s bind parameters: there is no way to splice raw text in.
public struct HTML: Sendable, Equatable, ExpressibleByStringInterpolation, CustomStringConvertible {
    public private(set) var markup: String

    public init(stringLiteral value: String) {
        markup = value
    }

    public init(stringInterpolation: StringInterpolation) {
        markup = stringInterpolation.markup
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var markup = ""

        public init(literalCapacity: Int, interpolationCount: Int) {
            markup.reserveCapacity(literalCapacity + interpolationCount * 16)
        }

        public mutating func appendLiteral(_ literal: String) { markup += literal }

        /// A value, as escaped text.
        public mutating func appendInterpolation(_ value: some CustomStringConvertible) {
            markup += HTML.escape(value.description)
        }

        /// An optional value: escaped text, or `none` when nil.
        public mutating func appendInterpolation(_ value: (some CustomStringConvertible)?, none: String = "–") {
            markup += HTML.escape(value.map(\.description) ?? none)
        }

        /// Markup built the same way.
        public mutating func appendInterpolation(_ html: HTML) { markup += html.markup }

        /// Several fragments, in order.
        public mutating func appendInterpolation(_ parts: [HTML]) { for part in parts { markup += part.markup } }
    }

    public var description: String { markup }

    /// `text` with the five HTML-significant characters as entities (safe in text and in quoted
    /// attribute values).
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default:
                // Control characters other than tab and line feed are not shown.
                if c.value < 0x20 && c != "\t" && c != "\n" { out += "\u{FFFD}" } else { out.unicodeScalars.append(c) }
            }
        }
        return out
    }
}
