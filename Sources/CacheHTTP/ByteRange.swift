// RFC 9110 §14: Range request header and byte-range specs.

package enum ByteRangeSpec: Sendable, Equatable {
    case closed(first: Int64, last: Int64)  // first-pos "-" last-pos
    case from(first: Int64)  // first-pos "-"
    case suffix(length: Int64)  // "-" suffix-length

    /// Nil when unsatisfiable (§14.1.2).
    package func resolve(length: Int64) -> Range<Int64>? {
        guard length > 0 else { return nil }
        switch self {
        case let .closed(first, last):
            guard first < length, first <= last else { return nil }
            return first..<(min(last, length - 1) + 1)
        case let .from(first):
            guard first < length else { return nil }
            return first..<length
        case let .suffix(n):
            guard n > 0 else { return nil }
            return max(0, length - n)..<length
        }
    }
}

package enum RangeHeaderParser {
    /// Nil for invalid syntax (the header is then ignored, §14.2); "bytes=-0" parses.
    package static func parse(_ value: String) -> [ByteRangeSpec]? {
        var v = value
        return v.withUTF8 { parse(bytes: UnsafeRawBufferPointer($0)) }
    }

    private static func parse(bytes b: UnsafeRawBufferPointer) -> [ByteRangeSpec]? {
        // range-unit "=" with no whitespace: "bytes = 0-1" is not this grammar.
        guard b.count > 6, ASCII.equalsIgnoringCase(b[0..<5], "bytes"), b[5] == UInt8(ascii: "=") else {
            return nil
        }
        // #range-spec (§5.6.1): whitespace only next to a comma, empty elements tolerated.
        var specs: [ByteRangeSpec] = []
        let n = b.count
        var i = 6
        if !ASCII.isOWS(b[i]), b[i] != ASCII.comma {
            guard let spec = parseSpec(b, &i) else { return nil }
            specs.append(spec)
        }
        while i < n {
            while i < n, ASCII.isOWS(b[i]) { i += 1 }
            guard i < n, b[i] == ASCII.comma else { return nil }
            i += 1
            while i < n, ASCII.isOWS(b[i]) { i += 1 }
            if i < n, b[i] != ASCII.comma {
                guard let spec = parseSpec(b, &i) else { return nil }
                specs.append(spec)
            }
        }
        return specs.isEmpty ? nil : specs
    }

    /// Saturating at Int64.max: huge positions stay valid (and unsatisfiable).
    private static func parseSpec(_ b: UnsafeRawBufferPointer, _ i: inout Int) -> ByteRangeSpec? {
        let first = ASCII.decimal(b, &i, saturating: true)
        guard i < b.count, b[i] == UInt8(ascii: "-") else { return nil }
        i += 1
        let last = ASCII.decimal(b, &i, saturating: true)
        switch (first, last) {
        case let (f?, l?): return l < f ? nil : .closed(first: f, last: l)
        case let (f?, nil): return .from(first: f)
        case let (nil, l?): return .suffix(length: l)
        case (nil, nil): return nil
        }
    }
}
