import CacheHTTP

/// JSON writing for the admin and stats routes (no Foundation on the server path).
enum JSONText {
    /// As synthesized `Codable` reads it back: a struct is an object of its stored properties, nil is null,
    /// an enum without payload its case name (its raw value for the wire types here).
    static func encode(_ value: Any) -> String {
        switch value {
        case let text as String: return string(text)
        case let flag as Bool: return flag ? "true" : "false"
        case let number as any BinaryInteger: return "\(number)"
        case let number as Double: return number.isFinite ? "\(number)" : "null"
        case let raw as any RawRepresentable: return encode(raw.rawValue)
        default: break
        }
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .optional: return mirror.children.first.map { encode($0.value) } ?? "null"
        case .collection, .set: return "[" + mirror.children.map { encode($0.value) }.joined(separator: ",") + "]"
        case .enum: return string("\(value)")
        default:
            let fields = mirror.children.compactMap { child in child.label.map { string($0) + ":" + encode(child.value) } }
            return "{" + fields.joined(separator: ",") + "}"
        }
    }

    static func string(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where ControlCharacters.isControl(scalar):  // C1 too: nothing a terminal acts on
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
