/// Minimal JSON writing for the admin endpoint (no Foundation on the server path).
enum JSONText {
    static func string(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    static func optional(_ value: String?) -> String { value.map(string) ?? "null" }
    static func optional(_ value: Int64?) -> String { value.map(String.init) ?? "null" }
}
