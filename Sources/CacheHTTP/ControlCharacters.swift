/// C0 controls (U+0000–U+001F), DEL and C1 controls (U+0080–U+009F) in
/// text that ends up on a terminal or a page (a download's name): ESC or
/// CSI would drive the terminal, CR and LF forge lines. Decided per Unicode
/// scalar, never per Character: "\r\n" is one Character made of two
/// controls, and a control can hide in a Character with combining marks.
package enum ControlCharacters {
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// Whether `text` holds any.
    package static func occur(in text: String) -> Bool {
        text.unicodeScalars.contains(where: isControl)
    }

    /// `text` without them (on the way in).
    package static func removed(from text: String) -> String {
        guard occur(in: text) else { return text }
        var out = String.UnicodeScalarView()
        out.append(contentsOf: text.unicodeScalars.lazy.filter { !isControl($0) })
        return String(out)
    }

    /// `text` with each shown as `\xHH` (on every way out: a name stored
    /// before they were removed, a URL, an error message).
    package static func escaped(_ text: String) -> String {
        replacing(in: text) { value in
            let hex = String(value, radix: 16, uppercase: true)
            return "\\x" + (hex.count < 2 ? "0" : "") + hex
        }
    }

    /// JSON text (as JSONEncoder writes it) with DEL and C1 controls, which
    /// JSON lets through raw, written as `\u00HH` escapes: the same value
    /// for a JSON reader, nothing a terminal acts on.
    package static func escapedInJSON(_ json: String) -> String {
        replacing(in: json) { value in
            let hex = String(value, radix: 16)
            return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
    }

    /// `text` with each written as `escape` gives it.
    private static func replacing(in text: String, _ escape: (UInt32) -> String) -> String {
        guard occur(in: text) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) { out += escape(scalar.value) } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }
}
