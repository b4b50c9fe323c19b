// Typed reads of one tag's attribute list; each failure names the tag, attribute and line.

struct HLSAttributeValues {
    let bytes: UnsafeBufferPointer<UInt8>
    let attributes: [HLSAttribute]
    let tag: String
    let line: Int
    let resolver: HLSURIResolver

    init(_ b: UnsafeBufferPointer<UInt8>, _ value: Range<Int>?, tag: String, line: Int,
         resolver: HLSURIResolver) throws(HLSError) {
        bytes = b
        self.tag = tag
        self.line = line
        self.resolver = resolver
        do {
            attributes = try value.map { v throws(HLSAttributeProblem) in try HLSAttributeList.parse(b, v) } ?? []
        } catch {
            throw .malformedAttributes(line: line, tag: tag, problem: error)
        }
    }

    /// The first attribute of that name (duplicates are not allowed, §4.2).
    func range(_ name: StaticString) -> Range<Int>? {
        attributes.first { HLSBytes.equals(bytes, $0.name, name) }?.value
    }

    /// As written, without quotes.
    func string(_ name: StaticString) -> String? { range(name).map { HLSBytes.string(bytes, $0) } }

    func required(_ name: StaticString) throws(HLSError) -> String { try present(string(name), name) }

    /// Absolute when it resolves to http(s), else as written.
    func uri(_ name: StaticString) -> String? { string(name).map { resolver.resolve($0) ?? $0 } }

    func requiredURI(_ name: StaticString) throws(HLSError) -> String { try present(uri(name), name) }
    func integer(_ name: StaticString) throws(HLSError) -> Int64? { try typed(name, HLSBytes.integer) }
    func requiredInteger(_ name: StaticString) throws(HLSError) -> Int64 { try present(integer(name), name) }
    func decimal(_ name: StaticString) throws(HLSError) -> Double? { try typed(name, HLSBytes.decimal) }

    /// YES or NO; absent is NO.
    func flag(_ name: StaticString) throws(HLSError) -> Bool {
        guard let r = range(name) else { return false }
        if HLSBytes.equals(bytes, r, "YES") { return true }
        if HLSBytes.equals(bytes, r, "NO") { return false }
        throw invalid(name)
    }

    /// "WxH".
    func resolution(_ name: StaticString) throws(HLSError) -> HLSResolution? {
        guard let r = range(name) else { return nil }
        guard let x = r.first(where: { bytes[$0] == UInt8(ascii: "x") || bytes[$0] == UInt8(ascii: "X") }),
              let w = HLSBytes.integer(bytes, r.lowerBound..<x), let h = HLSBytes.integer(bytes, (x + 1)..<r.upperBound),
              w <= Int32.max, h <= Int32.max
        else { throw invalid(name) }
        return HLSResolution(width: Int(w), height: Int(h))
    }

    /// Quoted "n[@o]" (EXT-X-MAP, EXT-X-PART).
    func byteRange(_ name: StaticString) throws(HLSError) -> (length: Int64, offset: Int64?)? {
        try typed(name, HLSBytes.byteRange)
    }

    /// Nil when absent, `invalid` when it does not parse.
    private func typed<T>(_ name: StaticString,
                          _ parse: (UnsafeBufferPointer<UInt8>, Range<Int>) -> T?) throws(HLSError) -> T? {
        guard let r = range(name) else { return nil }
        guard let v = parse(bytes, r) else { throw invalid(name) }
        return v
    }

    private func present<T>(_ value: T?, _ name: StaticString) throws(HLSError) -> T {
        guard let value else { throw missing(name) }
        return value
    }

    func missing(_ name: StaticString) -> HLSError {
        .missingAttribute(line: line, tag: tag, attribute: name.description)
    }

    func invalid(_ name: StaticString) -> HLSError {
        .invalidValue(line: line, tag: tag, attribute: name.description)
    }
}

extension HLSBytes {
    /// Digits with at most one ".": Double's own parser would also take "inf", "0x1p3", ….
    static func decimal(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> Double? {
        guard !r.isEmpty, r.count <= 64 else { return nil }
        var dots = 0
        for i in r {
            if b[i] == UInt8(ascii: ".") { dots += 1; continue }
            guard ASCII.isDigit(b[i]) else { return nil }
        }
        guard dots <= 1, r.count > dots else { return nil }
        return Double(string(b, r))
    }

    /// "n[@o]" with decimal integers; the sum must not overflow.
    static func byteRange(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> (length: Int64, offset: Int64?)? {
        let at = r.first { b[$0] == UInt8(ascii: "@") } ?? r.upperBound
        guard let length = integer(b, r.lowerBound..<at) else { return nil }
        guard at < r.upperBound else { return (length, nil) }
        guard let offset = integer(b, (at + 1)..<r.upperBound), offset <= Int64.max - length else { return nil }
        return (length, offset)
    }

    /// "0x…" of at most 16 bytes, as 16 (an integer: zeros on the left).
    static func iv(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> [UInt8]? {
        guard r.count > 2, r.count <= 34, b[r.lowerBound] == UInt8(ascii: "0"),
              ASCII.lower(b[r.lowerBound + 1]) == UInt8(ascii: "x") else { return nil }
        var out = [UInt8](repeating: 0, count: 16)
        var nibble = 31 // fill from the right
        for i in stride(from: r.upperBound - 1, through: r.lowerBound + 2, by: -1) {
            guard let v = ASCII.hexValue(b[i]) else { return nil }
            out[nibble / 2] |= nibble % 2 == 1 ? v : v << 4
            nibble -= 1
        }
        return out
    }
}
