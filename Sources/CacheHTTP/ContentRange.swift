/// RFC 9110 §14.4, parsed from upstream 206/416 responses and formatted for ours.
package struct ContentRange: Sendable, Equatable {
    package var range: Range<Int64>?  // nil for "bytes */N"
    package var total: Int64?  // nil when unknown ("/*")

    /// Nil unless well-formed and consistent (last >= first, last < total, not both '*').
    /// Overflowing numbers are rejected: they describe real bytes.
    package static func parse(_ value: String) -> ContentRange? {
        var v = value
        return v.withUTF8 { parse(bytes: UnsafeRawBufferPointer($0)) }
    }

    private static func parse(bytes b: UnsafeRawBufferPointer) -> ContentRange? {
        guard b.count > 6, ASCII.equalsIgnoringCase(b[0..<5], "bytes"), b[5] == ASCII.sp else { return nil }
        var i = 6
        var range: Range<Int64>? = nil
        if b[i] == UInt8(ascii: "*") {
            i += 1
        } else {
            guard let first = number(b, &i), i < b.count, b[i] == UInt8(ascii: "-") else { return nil }
            i += 1
            guard let last = number(b, &i), last >= first, last < .max else { return nil }
            range = first..<(last + 1)
        }
        guard i < b.count, b[i] == UInt8(ascii: "/") else { return nil }
        i += 1
        var total: Int64? = nil
        if i < b.count, b[i] == UInt8(ascii: "*") {
            i += 1
            guard range != nil else { return nil }
        } else {
            guard let t = number(b, &i) else { return nil }
            if let r = range, r.upperBound > t { return nil }
            total = t
        }
        guard i == b.count else { return nil }
        return ContentRange(range: range, total: total)
    }

    private static func number(_ b: UnsafeRawBufferPointer, _ i: inout Int) -> Int64? {
        ASCII.decimal(b, &i, saturating: false)
    }

    /// An empty range has no wire form; "bytes */*" comes only of a value parse rejects.
    package var headerValue: String {
        var out: [UInt8] = []
        out.reserveCapacity(48)
        out.append(contentsOf: "bytes ".utf8)
        if let r = range {
            appendDecimal(r.lowerBound, to: &out)
            out.append(UInt8(ascii: "-"))
            appendDecimal(r.upperBound - 1, to: &out)
        } else {
            out.append(UInt8(ascii: "*"))
        }
        out.append(UInt8(ascii: "/"))
        if let t = total { appendDecimal(t, to: &out) } else { out.append(UInt8(ascii: "*")) }
        return String(decoding: out, as: UTF8.self)
    }
}
