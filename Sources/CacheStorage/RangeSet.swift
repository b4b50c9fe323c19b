/// Sorted, disjoint, non-adjacent half-open byte ranges: what a resource has cached, or a download covers.
package struct RangeSet: Sendable, Equatable, CustomStringConvertible {
    package private(set) var ranges: [Range<Int64>] = []

    package init() {}

    package init(_ ranges: [Range<Int64>]) {
        for range in ranges { insert(range) }
    }

    package var isEmpty: Bool { ranges.isEmpty }
    package var byteCount: Int64 { ranges.reduce(0) { $0 + Int64($1.count) } }

    private func firstIndex(endingAfter offset: Int64) -> Int {
        var low = 0, high = ranges.count
        while low < high {
            let mid = (low + high) / 2
            if ranges[mid].upperBound <= offset { low = mid + 1 } else { high = mid }
        }
        return low
    }

    package mutating func insert(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        // Ranges touching or overlapping `range` merge with it.
        var start = firstIndex(endingAfter: range.lowerBound)
        if start > 0 && ranges[start - 1].upperBound == range.lowerBound { start -= 1 }
        var end = start
        var merged = range
        while end < ranges.count && ranges[end].lowerBound <= range.upperBound {
            merged = min(merged.lowerBound, ranges[end].lowerBound)..<max(merged.upperBound, ranges[end].upperBound)
            end += 1
        }
        ranges.replaceSubrange(start..<end, with: [merged])
    }

    package mutating func remove(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        let start = firstIndex(endingAfter: range.lowerBound)
        var end = start
        var kept: [Range<Int64>] = []
        while end < ranges.count && ranges[end].lowerBound < range.upperBound {
            let existing = ranges[end]
            if existing.lowerBound < range.lowerBound { kept.append(existing.lowerBound..<range.lowerBound) }
            if existing.upperBound > range.upperBound { kept.append(range.upperBound..<existing.upperBound) }
            end += 1
        }
        ranges.replaceSubrange(start..<end, with: kept)
    }

    package func contains(_ offset: Int64) -> Bool { run(containing: offset) != nil }

    package func run(containing offset: Int64) -> Range<Int64>? {
        let index = firstIndex(endingAfter: offset)
        guard index < ranges.count, ranges[index].lowerBound <= offset else { return nil }
        return ranges[index]
    }

    package func covers(_ range: Range<Int64>) -> Bool {
        if range.isEmpty { return true }
        guard let run = run(containing: range.lowerBound) else { return false }
        return run.upperBound >= range.upperBound
    }

    /// The parts of `range` that are in the set, in order.
    package func intersection(_ range: Range<Int64>) -> [Range<Int64>] {
        guard !range.isEmpty else { return [] }
        var result: [Range<Int64>] = []
        var index = firstIndex(endingAfter: range.lowerBound)
        while index < ranges.count && ranges[index].lowerBound < range.upperBound {
            result.append(max(ranges[index].lowerBound, range.lowerBound)..<min(ranges[index].upperBound, range.upperBound))
            index += 1
        }
        return result
    }

    /// The parts of `range` that are missing from the set, in order.
    package func gaps(in range: Range<Int64>) -> [Range<Int64>] {
        var result: [Range<Int64>] = []
        var cursor = range.lowerBound
        for present in intersection(range) {
            if present.lowerBound > cursor { result.append(cursor..<present.lowerBound) }
            cursor = present.upperBound
        }
        if cursor < range.upperBound { result.append(cursor..<range.upperBound) }
        return result
    }

    package mutating func clip(to limit: Int64) { remove(limit..<Int64.max) }

    /// "0-199,500-699": inclusive byte positions, as in HTTP.
    package var description: String {
        ranges.map { "\($0.lowerBound)-\($0.upperBound - 1)" }.joined(separator: ",")
    }

    /// Parses `description`'s format; nil on any malformed element.
    package init?(parsing text: Substring) {
        var text = String(text)
        guard let parsed = text.withUTF8({ RangeSet(parsing: MetadataBytes($0)) }) else { return nil }
        self = parsed
    }

    /// "first-last,first-last" (inclusive, as `description` writes); empty for none.
    init?(parsing text: MetadataBytes) {
        self.init()
        if text.isEmpty { return }
        for part in text.split(UInt8(ascii: ",")) {
            let bounds = part.split(UInt8(ascii: "-"))
            guard bounds.count == 2, let first = bounds[0].int64, let last = bounds[1].int64,
                  first >= 0, last >= first, last < Int64.max else { return nil }
            insert(first..<(last + 1))
        }
    }
}
