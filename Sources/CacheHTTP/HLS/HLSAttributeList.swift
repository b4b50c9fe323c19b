// Attribute lists (RFC 8216bis §4.2). Blanks around names, values and commas (some packagers
// write ", ") and a trailing comma are tolerated; anything leaving a value ambiguous is an error.

struct HLSAttribute {
    var name: Range<Int>
    var value: Range<Int>  // without its quotes
    var isQuoted: Bool
}

enum HLSAttributeList {
    static func parse(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) throws(HLSAttributeProblem) -> [HLSAttribute] {
        var out: [HLSAttribute] = []
        var i = r.lowerBound
        let end = r.upperBound
        let quote = UInt8(ascii: "\""), equals = UInt8(ascii: "=")
        while true {
            while i < end, ASCII.isOWS(b[i]) { i += 1 }
            guard i < end else { break }
            let nameStart = i
            while i < end, b[i] != equals, b[i] != ASCII.comma, b[i] != quote { i += 1 }
            guard i < end, b[i] == equals else { throw .missingEquals }
            let name = HLSBytes.trimmed(b, nameStart..<i)
            guard !name.isEmpty else { throw .emptyName }
            i += 1
            while i < end, ASCII.isOWS(b[i]) { i += 1 }
            if i < end, b[i] == quote {
                let valueStart = i + 1
                var close = valueStart
                while close < end, b[close] != quote { close += 1 }
                guard close < end else { throw .unterminatedQuote }
                out.append(HLSAttribute(name: name, value: valueStart..<close, isQuoted: true))
                i = close + 1
                while i < end, ASCII.isOWS(b[i]) { i += 1 }
                guard i == end || b[i] == ASCII.comma else { throw .textAfterQuotedString }
            } else {
                let valueStart = i
                while i < end, b[i] != ASCII.comma { i += 1 }
                let value = HLSBytes.trimmed(b, valueStart..<i)
                guard !value.isEmpty else { throw .missingValue }
                out.append(HLSAttribute(name: name, value: value, isQuoted: false))
            }
            guard i < end else { break }
            i += 1
        }
        return out
    }
}
