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
        guard occur(in: text) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out += "\\x" + (hex.count < 2 ? "0" : "") + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// JSON text (as JSONEncoder writes it) with DEL and C1 controls, which
    /// JSON lets through raw, written as `\u00HH` escapes: the same value
    /// for a JSON reader, nothing a terminal acts on.
    package static func escapedInJSON(_ json: String) -> String {
        guard occur(in: json) else { return json }
        var out = ""
        for scalar in json.unicodeScalars {
            if isControl(scalar) {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
