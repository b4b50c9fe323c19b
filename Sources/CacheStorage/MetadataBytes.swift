/// A run of stored metadata bytes (text, line, key or value): the decoder slices and compares bytes
/// instead of building Substrings. Valid only while its buffer is (one `withUnsafeBufferPointer`).
struct MetadataBytes {
    private let base: UnsafeBufferPointer<UInt8>
    private let start: Int
    private let end: Int

    init(_ base: UnsafeBufferPointer<UInt8>) { self.init(base, base.startIndex, base.endIndex) }

    private init(_ base: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) {
        (self.base, self.start, self.end) = (base, start, end)
    }

    var count: Int { end - start }
    var isEmpty: Bool { start == end }
    /// The text, invalid UTF-8 repaired as `String(decoding:as:)` does.
    var string: String { String(decoding: UnsafeBufferPointer(rebasing: base[start..<end]), as: UTF8.self) }

    func equals(_ literal: StaticString) -> Bool {
        guard literal.utf8CodeUnitCount == count else { return false }
        return literal.withUTF8Buffer { lit in
            var i = start
            for byte in lit {
                if base[i] != byte { return false }
                i += 1
            }
            return true
        }
    }

    /// Equal to a String's bytes (named apart so literals pick the StaticString one).
    func equalsText(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { lit in
            lit.count == count && lit.elementsEqual(UnsafeBufferPointer(rebasing: base[start..<end]))
        }
    }

    func firstIndex(of byte: UInt8) -> Int? {
        var i = start
        while i < end {
            if base[i] == byte { return i }
            i += 1
        }
        return nil
    }

    func contains(_ byte: UInt8) -> Bool { firstIndex(of: byte) != nil }
    func prefix(upTo index: Int) -> MetadataBytes { MetadataBytes(base, start, index) }
    func suffix(from index: Int) -> MetadataBytes { MetadataBytes(base, min(index, end), end) }

    subscript(_ index: Int) -> UInt8 { base[index] }
    var startIndex: Int { start }
    var endIndex: Int { end }

    /// "key value" split at the first space; the value is empty without one.
    func splitKey() -> (key: MetadataBytes, value: MetadataBytes) {
        guard let space = firstIndex(of: UInt8(ascii: " ")) else { return (self, suffix(from: end)) }
        return (prefix(upTo: space), suffix(from: space + 1))
    }

    /// The pieces between `separator`s, empty ones included.
    func split(_ separator: UInt8) -> [MetadataBytes] {
        var pieces: [MetadataBytes] = []
        var from = start
        while let at = suffix(from: from).firstIndex(of: separator) {
            pieces.append(MetadataBytes(base, from, at))
            from = at + 1
        }
        pieces.append(MetadataBytes(base, from, end))
        return pieces
    }

    /// What `Int64(String)` accepts: an optional sign, then decimal digits that fit.
    var int64: Int64? {
        var i = start
        var negative = false
        if i < end, base[i] == UInt8(ascii: "+") || base[i] == UInt8(ascii: "-") {
            negative = base[i] == UInt8(ascii: "-")
            i += 1
        }
        guard i < end else { return nil }
        var value: Int64 = 0
        while i < end {
            let digit = base[i] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (next, o2) = negative ? times.subtractingReportingOverflow(Int64(digit))
                                      : times.addingReportingOverflow(Int64(digit))
            guard !o1, !o2 else { return nil }
            value = next
            i += 1
        }
        return value
    }

    /// The non-empty lines (split at "\n").
    func lines() -> Lines { Lines(bytes: self) }

    struct Lines: IteratorProtocol {
        var bytes: MetadataBytes

        mutating func next() -> MetadataBytes? {
            while !bytes.isEmpty {
                let end = bytes.firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
                let line = bytes.prefix(upTo: end)
                bytes = bytes.suffix(from: end + 1)
                if !line.isEmpty { return line }
            }
            return nil
        }
    }
}
