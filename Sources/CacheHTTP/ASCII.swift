import Glibc

// Byte helpers of the parsers: UTF-8 code units, no allocation, no grapheme logic.

extension Collection<UInt8> {
    /// `body` over the bytes in one buffer: in place when they are contiguous, else a copy.
    func withContiguousBytes<R, E: Error>(_ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
        let result = withContiguousStorageIfAvailable { b in Result { () throws(E) in try body(b) } }
            ?? Array(self).withUnsafeBufferPointer { b in Result { () throws(E) in try body(b) } }
        return try result.get()
    }
}

extension BidirectionalCollection<UInt8> {
    /// Without SP and HTAB at either end.
    func trimmingOWS() -> SubSequence {
        var lo = startIndex, hi = endIndex
        while lo < hi, ASCII.isOWS(self[lo]) { formIndex(after: &lo) }
        while hi > lo, ASCII.isOWS(self[index(before: hi)]) { formIndex(before: &hi) }
        return self[lo..<hi]
    }
}

extension String {
    /// One `memcmp`: route prefixes are checked on every request, where `hasPrefix` and
    /// `utf8.starts(with:)` cost 220–300 instructions a call.
    package func hasBytePrefix(_ prefix: String) -> Bool {
        // In place on native strings; `withUTF8` needs mutable copies (350 instructions a hit more).
        let inPlace = utf8.withContiguousStorageIfAvailable { s in
            prefix.utf8.withContiguousStorageIfAvailable { p in
                s.count >= p.count && (p.isEmpty || memcmp(s.baseAddress!, p.baseAddress!, p.count) == 0)
            }
        }
        return inPlace.flatMap { $0 } ?? utf8.starts(with: prefix.utf8)
    }
}

enum ASCII {
    static let cr = UInt8(ascii: "\r")
    static let lf = UInt8(ascii: "\n")
    static let sp = UInt8(ascii: " ")
    static let ht = UInt8(ascii: "\t")
    static let colon = UInt8(ascii: ":")
    static let comma = UInt8(ascii: ",")

    @inline(__always)
    static func lower(_ b: UInt8) -> UInt8 { (b &- 0x41) < 26 ? b | 0x20 : b }

    @inline(__always)
    static func isDigit(_ b: UInt8) -> Bool { (b &- 0x30) < 10 }

    @inline(__always)
    static func isOWS(_ b: UInt8) -> Bool { b == sp || b == ht }

    /// RFC 9110 §5.6.2 tchar, as a 128-bit membership mask (bytes 0-63, 64-127).
    @inline(__always)
    static func isTokenChar(_ b: UInt8) -> Bool {
        let lo: UInt64 = 0x03FF_6CFA_0000_0000, hi: UInt64 = 0x57FF_FFFF_C7FF_FFFE
        return b < 64 ? (lo >> UInt64(b)) & 1 != 0
            : b < 128 ? (hi >> UInt64(b &- 64)) & 1 != 0 : false
    }

    /// Any of the 8 bytes below 0x20 or 0x7F: a control (or HTAB, or line end) to look at.
    @inline(__always)
    static func mayHoldControl(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let below20 = (w &- ones &* 0x20) & ~w & highs
        let del = w ^ (ones &* 0x7F)
        let is7F = (del &- ones) & ~del & highs
        return (below20 | is7F) != 0
    }

    /// Any of the 8 bytes outside VCHAR (0x21-0x7E).
    @inline(__always)
    static func mayHoldNonVisible(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let below21 = (w &- ones &* 0x21) & ~w & highs
        let del = w ^ (ones &* 0x7F)
        let is7F = (del &- ones) & ~del & highs
        return (below21 | is7F | (w & highs)) != 0
    }

    /// HTAB, SP, VCHAR, obs-text.
    @inline(__always)
    static func isFieldValueChar(_ b: UInt8) -> Bool { b == ht || (b >= 0x20 && b != 0x7F) }

    @inline(__always)
    static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: return b &- 0x30
        case 0x41...0x46: return b &- 0x41 &+ 10
        case 0x61...0x66: return b &- 0x61 &+ 10
        default: return nil
        }
    }

    @inline(__always)
    static func equalsIgnoringCase(_ a: String, _ b: String) -> Bool {
        let ua = a.utf8, ub = b.utf8
        guard ua.count == ub.count else { return false }
        // Native strings are contiguous: compare the bytes in place (a hot path: every field lookup).
        if let same = ua.withContiguousStorageIfAvailable({ pa in
            ub.withContiguousStorageIfAvailable { pb in
                for i in 0..<pa.count where lower(pa[i]) != lower(pb[i]) { return false }
                return true
            }
        }), let same {
            return same
        }
        var ib = ub.makeIterator()
        for x in ua {
            guard let y = ib.next(), lower(x) == lower(y) else { return false }
        }
        return true
    }

    @inline(__always)
    static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer.SubSequence, _ s: String) -> Bool {
        let us = s.utf8
        guard bytes.count == us.count else { return false }
        var i = bytes.startIndex
        for y in us {
            if lower(bytes[i]) != lower(y) { return false }
            i += 1
        }
        return true
    }

    /// 1 to 5 digits, at most 65535.
    static func port<C: Collection<UInt8>>(_ digits: C) -> Int? {
        guard (1...5).contains(digits.count), digits.allSatisfy(isDigit) else { return nil }
        let p = digits.reduce(0) { $0 * 10 + Int($1 &- 0x30) }
        return p <= 65_535 ? p : nil
    }

    /// 1*DIGIT at `i`, moving past them; nil without one. Past Int64.max: `.max` when
    /// `saturating`, else nil.
    static func decimal(_ b: UnsafeRawBufferPointer, _ i: inout Int, saturating: Bool) -> Int64? {
        let start = i
        var v: Int64 = 0
        while i < b.count, isDigit(b[i]) {
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(Int64(b[i] &- 0x30))
            if (o1 || o2) && !saturating { return nil }
            v = o1 || o2 ? .max : s
            i += 1
        }
        return i == start ? nil : v
    }

    /// The path of a path or URL (query and fragment ignored) ends in lower-case `suffix`, any case.
    static func pathEnds(_ path: String, with suffix: String) -> Bool {
        // On the bytes in place: through the String view it cost ~1,200 instructions, and every
        // entry's first use asks three times (playlist and MPD sniffing).
        path.utf8.withContiguousStorageIfAvailable { u in
            let end = u.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? u.count
            let count = suffix.utf8.count
            return end >= count && zip(u[(end - count)..<end], suffix.utf8).allSatisfy { lower($0) == $1 }
        } ?? pathEnds(String(decoding: Array(path.utf8), as: UTF8.self), with: suffix)
    }

    /// Other bytes (UTF-8 too) pass through.
    static func lowercased(_ s: String) -> String {
        // Most hosts and schemes are already lowercase.
        if !s.utf8.contains(where: { (0x41...0x5A).contains($0) }) { return s }
        return String(decoding: s.utf8.map(lower), as: UTF8.self)
    }
}
