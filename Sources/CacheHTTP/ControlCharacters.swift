/// C0, DEL and C1 controls in text bound for a terminal or page (a download's name): ESC or
/// CSI drive terminals, CR and LF forge lines. Per scalar, never Character: "\r\n" is one
/// Character of two controls, and combining marks can hide one.
package enum ControlCharacters {
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    package static func occur(in text: String) -> Bool { text.unicodeScalars.contains(where: isControl) }

    /// `text` without them (on the way in).
    package static func removed(from text: String) -> String {
        guard occur(in: text) else { return text }
        var out = String.UnicodeScalarView()
        out.append(contentsOf: text.unicodeScalars.lazy.filter { !isControl($0) })
        return String(out)
    }

    /// `\xHH` on every way out (a name stored before they were removed, a URL, an error).
    package static func escaped(_ text: String) -> String {
        replacing(in: text) { value in
            let hex = String(value, radix: 16, uppercase: true)
            return "\\x" + (hex.count < 2 ? "0" : "") + hex
        }
    }

    /// DEL and C1, which JSON lets through raw, as `\u00HH`: the same value to a JSON reader.
    package static func escapedInJSON(_ json: String) -> String {
        replacing(in: json) { value in
            let hex = String(value, radix: 16)
            return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
    }

    private static func replacing(in text: String, _ escape: (UInt32) -> String) -> String {
        guard occur(in: text) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) { out += escape(scalar.value) } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }
}
