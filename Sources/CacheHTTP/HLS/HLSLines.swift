// Playlist lines told apart as ranges into the caller's bytes, so the rewriter copies the rest.

/// `content` without the line end (LF or CR LF).
struct HLSLine {
    var content: Range<Int>
    var number: Int
}

struct HLSLineScanner: IteratorProtocol {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position: Int
    private var number = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) {
        self.bytes = bytes
        self.position = start
    }

    mutating func next() -> HLSLine? {
        let n = bytes.count
        guard position < n else { return nil }
        let start = position
        var end = start
        while end < n, bytes[end] != ASCII.lf { end += 1 }
        position = end + 1
        number += 1
        var contentEnd = end
        if contentEnd > start, bytes[contentEnd - 1] == ASCII.cr { contentEnd -= 1 }
        return HLSLine(content: start..<contentEnd, number: number)
    }
}

/// RFC 8216bis §4.1; surrounding blanks are not part of names or URIs.
enum HLSLineKind {
    case blank
    case comment
    /// `name` without the "#"; `value` after the first ":", nil without one.
    case tag(name: Range<Int>, value: Range<Int>?)
    case uri(Range<Int>)

    init(_ b: UnsafeBufferPointer<UInt8>, _ line: Range<Int>) {
        let r = HLSBytes.trimmed(b, line)
        guard !r.isEmpty else { self = .blank; return }
        guard b[r.lowerBound] == UInt8(ascii: "#") else { self = .uri(r); return }
        guard HLSBytes.hasPrefix(b, r, "#EXT") else { self = .comment; return }
        var colon = r.lowerBound
        while colon < r.upperBound, b[colon] != ASCII.colon { colon += 1 }
        let name = (r.lowerBound + 1)..<colon
        self = .tag(name: name, value: colon < r.upperBound ? (colon + 1)..<r.upperBound : nil)
    }
}

enum HLSBytes {
    @inline(__always)
    static func trimmed(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> Range<Int> {
        b[r].trimmingOWS().indices
    }

    @inline(__always)
    static func hasPrefix(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>, _ prefix: StaticString) -> Bool {
        let n = prefix.utf8CodeUnitCount
        guard r.count >= n else { return false }
        let p = prefix.utf8Start
        for k in 0..<n where b[r.lowerBound + k] != p[k] { return false }
        return true
    }

    @inline(__always)
    static func equals(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>, _ s: StaticString) -> Bool {
        r.count == s.utf8CodeUnitCount && hasPrefix(b, r, s)
    }

    static func string(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: b[r]), as: UTF8.self)
    }

    /// A decimal-integer (§4.2) within Int64.
    static func integer(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>) -> Int64? {
        guard !r.isEmpty, r.count <= 19 else { return nil }
        var v: Int64 = 0
        for i in r {
            guard ASCII.isDigit(b[i]) else { return nil }
            let (times10, o1) = v.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int64(b[i] &- 0x30))
            guard !o1, !o2 else { return nil }
            v = sum
        }
        return v
    }

    /// The index after an optional BOM, when `#EXTM3U` follows alone on its line (blanks aside).
    static func headerStart(_ b: UnsafeBufferPointer<UInt8>) -> Int? {
        let start = hasPrefix(b, 0..<b.count, "\u{FEFF}") ? 3 : 0
        guard hasPrefix(b, start..<b.count, "#EXTM3U") else { return nil }
        var i = start + 7
        while i < b.count, ASCII.isOWS(b[i]) { i += 1 }
        guard i == b.count || b[i] == ASCII.lf || b[i] == ASCII.cr else { return nil }
        return start
    }
}
