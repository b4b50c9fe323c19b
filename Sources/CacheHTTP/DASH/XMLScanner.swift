// Just enough XML to find URL carriers: tags, attributes and text as byte ranges, so a rewrite
// can splice values and copy the rest verbatim. Well-formedness is checked where a rewrite
// depends on it; entities are decoded only where a value is read.

/// `value` is inside the quotes.
struct XMLAttribute {
    var name: Range<Int>
    var value: Range<Int>
}

enum XMLToken {
    case start(name: Range<Int>, attributes: [XMLAttribute], selfClosing: Bool)
    case end(name: Range<Int>)
    case text(Range<Int>)
    case cdata(Range<Int>)
    case other  // a comment, processing instruction or document type declaration
}

/// Throws at the first construct that is not well-formed, or at the end when an element is open.
struct XMLScanner {
    let b: UnsafeBufferPointer<UInt8>
    private(set) var i = 0
    private var open: [Range<Int>] = []
    static let maxDepth = 256  // an MPD nests about six deep; a deeper tree's release would recurse as deep
    private(set) var sawRoot = false

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        b = bytes
        // Past a UTF-8 byte order mark.
        if b.count >= 3, b[0] == 0xEF, b[1] == 0xBB, b[2] == 0xBF { i = 3 }
    }

    var depth: Int { open.count }

    mutating func next() throws(DASHError) -> XMLToken? {
        guard i < b.count else {
            if !open.isEmpty { throw fail("an element is not closed") }
            if !sawRoot { throw fail("no root element") }
            return nil
        }
        if b[i] != UInt8(ascii: "<") {
            let start = i
            while i < b.count, b[i] != UInt8(ascii: "<") { i += 1 }
            return .text(start..<i)
        }
        if has("<!--") {
            guard let end = find("-->", from: i + 4) else { throw fail("comment not terminated") }
            i = end + 3
            return .other
        }
        if has("<![CDATA[") {
            guard !open.isEmpty else { throw fail("CDATA outside the root element") }
            let start = i + 9
            guard let end = find("]]>", from: start) else { throw fail("CDATA not terminated") }
            i = end + 3
            return .cdata(start..<end)
        }
        if has("<?") {
            guard let end = find("?>", from: i + 2) else { throw fail("processing instruction not terminated") }
            i = end + 2
            return .other
        }
        if has("<!") {
            // A document type declaration, maybe with an internal subset in brackets.
            var j = i + 2, brackets = 0
            while j < b.count {
                let c = b[j]
                if c == UInt8(ascii: "[") { brackets += 1 }
                if c == UInt8(ascii: "]") { brackets -= 1 }
                if c == UInt8(ascii: ">") && brackets <= 0 { break }
                j += 1
            }
            guard j < b.count else { throw fail("declaration not terminated") }
            i = j + 1
            return .other
        }
        if has("</") {
            let nameStart = i + 2
            var j = nameStart
            while j < b.count, isNameByte(b[j]) { j += 1 }
            let name = nameStart..<j
            while j < b.count, XMLText.isBlank(b[j]) { j += 1 }
            guard j < b.count, b[j] == UInt8(ascii: ">"), !name.isEmpty else { throw fail("bad end tag") }
            guard let top = open.last, equal(top, name) else { throw fail("end tag does not match its start tag") }
            open.removeLast()
            i = j + 1
            return .end(name: name)
        }
        return try startTag()
    }

    private mutating func startTag() throws(DASHError) -> XMLToken {
        var j = i + 1
        let nameStart = j
        while j < b.count, isNameByte(b[j]) { j += 1 }
        let name = nameStart..<j
        guard !name.isEmpty else { throw fail("bad start tag") }
        guard !open.isEmpty || !sawRoot else { throw fail("a second root element") }
        var attributes: [XMLAttribute] = []
        while true {
            var blanks = 0
            while j < b.count, XMLText.isBlank(b[j]) { j += 1; blanks += 1 }
            guard j < b.count else { throw fail("start tag not terminated") }
            if b[j] == UInt8(ascii: ">") {
                guard open.count < Self.maxDepth else { throw fail("elements nested deeper than \(Self.maxDepth)") }
                i = j + 1
                open.append(name)
                sawRoot = true
                return .start(name: name, attributes: attributes, selfClosing: false)
            }
            if b[j] == UInt8(ascii: "/") {
                guard j + 1 < b.count, b[j + 1] == UInt8(ascii: ">") else { throw fail("bad empty-element tag") }
                i = j + 2
                sawRoot = true
                return .start(name: name, attributes: attributes, selfClosing: true)
            }
            guard blanks > 0 else { throw fail("attributes must be separated by white space") }
            let attributeStart = j
            while j < b.count, isNameByte(b[j]) { j += 1 }
            let attributeName = attributeStart..<j
            guard !attributeName.isEmpty else { throw fail("bad attribute name") }
            while j < b.count, XMLText.isBlank(b[j]) { j += 1 }
            guard j < b.count, b[j] == UInt8(ascii: "=") else { throw fail("attribute without a value") }
            j += 1
            while j < b.count, XMLText.isBlank(b[j]) { j += 1 }
            guard j < b.count, b[j] == UInt8(ascii: "\"") || b[j] == UInt8(ascii: "'") else {
                throw fail("attribute value not quoted")
            }
            let quote = b[j]
            let valueStart = j + 1
            var k = valueStart
            while k < b.count, b[k] != quote {
                if b[k] == UInt8(ascii: "<") { throw fail("'<' in an attribute value") }
                k += 1
            }
            guard k < b.count else { throw fail("attribute value not terminated") }
            if attributes.contains(where: { equal($0.name, attributeName) }) { throw fail("repeated attribute") }
            attributes.append(XMLAttribute(name: attributeName, value: valueStart..<k))
            j = k + 1
        }
    }

    private func fail(_ problem: String) -> DASHError { .malformedXML(offset: i, problem: problem) }

    /// `j` nil: where the scan is.
    private func has(_ s: StaticString, at j: Int? = nil) -> Bool {
        let j = j ?? i, n = s.utf8CodeUnitCount
        guard j + n <= b.count else { return false }
        for k in 0..<n where b[j + k] != s.utf8Start[k] { return false }
        return true
    }

    private func find(_ s: StaticString, from: Int) -> Int? {
        (from..<max(from, b.count)).first { has(s, at: $0) }
    }

    private func equal(_ x: Range<Int>, _ y: Range<Int>) -> Bool {
        x.count == y.count && b[x].elementsEqual(b[y])
    }


    private func isNameByte(_ c: UInt8) -> Bool {
        !XMLText.isBlank(c) && c != UInt8(ascii: ">") && c != UInt8(ascii: "/") && c != UInt8(ascii: "=")
            && c != UInt8(ascii: "<") && c != UInt8(ascii: "\"") && c != UInt8(ascii: "'")
    }
}

extension XMLScanner {
    /// The local part of a name ("BaseURL" of "mpd:BaseURL").
    func localName(_ name: Range<Int>) -> UnsafeBufferPointer<UInt8> {
        let colon = b[name].lastIndex(of: UInt8(ascii: ":")).map { $0 + 1 } ?? name.lowerBound
        return UnsafeBufferPointer(rebasing: b[colon..<name.upperBound])
    }

    func isNamed(_ name: Range<Int>, _ s: String) -> Bool { localName(name).elementsEqual(s.utf8) }
}

enum XMLText {
    static func isBlank(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }

    /// The five predefined entities and character references decoded; nil on any other
    /// reference (DTD-declared: such a value is left alone).
    static func decode<C: Collection<UInt8>>(_ bytes: C) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var it = Array(bytes)[...]
        while let c = it.first {
            it = it.dropFirst()
            guard c == UInt8(ascii: "&") else { out.append(c); continue }
            guard let semi = it.firstIndex(of: UInt8(ascii: ";")), semi - it.startIndex <= 10 else { return nil }
            let name = String(decoding: it[..<semi], as: UTF8.self)
            it = it[(semi + 1)...]
            switch name {
            case "amp": out.append(UInt8(ascii: "&"))
            case "lt": out.append(UInt8(ascii: "<"))
            case "gt": out.append(UInt8(ascii: ">"))
            case "quot": out.append(UInt8(ascii: "\""))
            case "apos": out.append(UInt8(ascii: "'"))
            default:
                guard name.hasPrefix("#") else { return nil }
                let digits = name.dropFirst()
                let value = digits.hasPrefix("x") ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
                guard let value, let scalar = Unicode.Scalar(value), value != 0 else { return nil }
                out.append(contentsOf: String(Character(scalar)).utf8)
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    /// `quote` of the attribute value; nil: in text.
    static func escape(_ s: String, quote: UInt8?) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count)
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "&"): out.append(contentsOf: "&amp;".utf8)
            case UInt8(ascii: "<"): out.append(contentsOf: "&lt;".utf8)
            case UInt8(ascii: ">") where quote == nil: out.append(contentsOf: "&gt;".utf8)
            case UInt8(ascii: "\"") where quote == UInt8(ascii: "\""): out.append(contentsOf: "&quot;".utf8)
            case UInt8(ascii: "'") where quote == UInt8(ascii: "'"): out.append(contentsOf: "&apos;".utf8)
            default: out.append(c)
            }
        }
        return out
    }

    static func trimmed(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> Range<Int> {
        var lo = r.lowerBound, hi = r.upperBound
        while lo < hi, isBlank(b[lo]) { lo += 1 }
        while hi > lo, isBlank(b[hi - 1]) { hi -= 1 }
        return lo..<hi
    }
}
