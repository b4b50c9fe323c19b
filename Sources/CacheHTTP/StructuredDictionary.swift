/// The syntax of a Structured Field Dictionary (RFC 8941 §3.2, §4.2.2), to tell valid from
/// invalid: a recipient ignores a CDN-Cache-Control that does not parse (RFC 9213 §2.1).
package enum StructuredDictionary {
    /// A member's bare item (§3.3); a member without a value is Boolean true.
    package enum Kind: Sendable, Equatable {
        case integer(negative: Bool)
        case decimal
        case string
        case token
        case byteSequence
        case boolean(Bool)
    }

    /// `text`: the value as written, nil for a bare key.
    package struct Member: Sendable, Equatable {
        package var key: String
        package var kind: Kind
        package var text: String?
    }

    /// The members in order, parameters left out; nil when invalid. The field lines form one
    /// list (§4.2); an empty field is no dictionary (RFC 9213 §2.1: ignored too).
    package static func members(_ values: [String]) -> [Member]? {
        var parser = Parser(s: Array(values.joined(separator: ",").utf8))
        return parser.dictionary() ? parser.members : nil
    }

    private struct Parser {
        let s: [UInt8]
        var i = 0
        var members: [Member] = []
        var kind = Kind.boolean(true)  // of the bare item just read

        var peek: UInt8? { i < s.count ? s[i] : nil }
        mutating func skip(_ isBlank: (UInt8) -> Bool) { while let c = peek, isBlank(c) { i += 1 } }

        /// §4.2.2 with the leading and trailing SP of §4.2 (and OWS around commas).
        mutating func dictionary() -> Bool {
            skip { $0 == 0x20 }
            guard peek != nil else { return false }
            while true {
                let keyStart = i
                guard key() else { return false }
                var member = Member(key: String(decoding: s[keyStart..<i], as: UTF8.self), kind: .boolean(true),
                                    text: nil)
                if peek == UInt8(ascii: "=") {
                    i += 1
                    let valueStart = i
                    guard bareItem() else { return false }
                    member.kind = kind
                    member.text = String(decoding: s[valueStart..<i], as: UTF8.self)
                }
                members.append(member)
                guard parameters() else { return false }
                skip(ASCII.isOWS)
                guard let c = peek else { return true }
                guard c == UInt8(ascii: ",") else { return false }
                i += 1
                skip(ASCII.isOWS)
                guard peek != nil else { return false }  // a trailing comma
            }
        }

        mutating func parameters() -> Bool {
            while peek == UInt8(ascii: ";") {
                i += 1
                skip { $0 == 0x20 }
                guard key() else { return false }
                if peek == UInt8(ascii: "=") {
                    i += 1
                    guard bareItem() else { return false }
                }
            }
            return true
        }

        /// ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )
        mutating func key() -> Bool {
            guard let c = peek, isLowerAlpha(c) || c == UInt8(ascii: "*") else { return false }
            i += 1
            while let c = peek, isLowerAlpha(c) || ASCII.isDigit(c) || "_-.*".utf8.contains(c) { i += 1 }
            return true
        }

        mutating func bareItem() -> Bool {
            guard let c = peek else { return false }
            if c == UInt8(ascii: "-") || ASCII.isDigit(c) { return number() }
            if c == UInt8(ascii: "\"") {
                kind = .string
                return string()
            }
            if c == UInt8(ascii: ":") {
                kind = .byteSequence
                return byteSequence()
            }
            if c == UInt8(ascii: "?") {
                i += 1
                guard let b = peek, b == UInt8(ascii: "0") || b == UInt8(ascii: "1") else { return false }
                kind = .boolean(b == UInt8(ascii: "1"))
                i += 1
                return true
            }
            if isAlpha(c) || c == UInt8(ascii: "*") {
                kind = .token
                i += 1
                while let t = peek, ASCII.isTokenChar(t) || t == UInt8(ascii: ":") || t == UInt8(ascii: "/") { i += 1 }
                return true
            }
            return false
        }

        /// Integer (at most 15 digits) or Decimal (at most 12 + 3 digits).
        mutating func number() -> Bool {
            let negative = peek == UInt8(ascii: "-")
            if negative { i += 1 }
            var integer = 0
            while let c = peek, ASCII.isDigit(c) { integer += 1; i += 1 }
            guard integer > 0 else { return false }
            kind = .integer(negative: negative)
            guard peek == UInt8(ascii: ".") else { return integer <= 15 }
            kind = .decimal
            i += 1
            var fraction = 0
            while let c = peek, ASCII.isDigit(c) { fraction += 1; i += 1 }
            return integer <= 12 && (1...3).contains(fraction)
        }

        mutating func string() -> Bool {
            i += 1
            while let c = peek {
                i += 1
                if c == UInt8(ascii: "\"") { return true }
                if c == UInt8(ascii: "\\") {
                    guard let e = peek, e == UInt8(ascii: "\"") || e == UInt8(ascii: "\\") else { return false }
                    i += 1
                } else if c < 0x20 || c > 0x7E {
                    return false
                }
            }
            return false
        }

        mutating func byteSequence() -> Bool {
            i += 1
            while let c = peek {
                i += 1
                if c == UInt8(ascii: ":") { return true }
                guard isAlpha(c) || ASCII.isDigit(c) || "+/=".utf8.contains(c) else { return false }
            }
            return false
        }

        func isLowerAlpha(_ c: UInt8) -> Bool { c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z") }
        func isAlpha(_ c: UInt8) -> Bool { isLowerAlpha(c | 0x20) }
    }
}
