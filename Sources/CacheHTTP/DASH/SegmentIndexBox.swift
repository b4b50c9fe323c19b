extension DASH {
    /// The segments a `sidx` box (ISO/IEC 14496-12 8.16.3) at `indexRange` of `url` names, as
    /// byte ranges with durations; further `sidx` boxes are fetched like the media. Throws
    /// unless `index` starts with a well-formed `sidx`.
    package static func segments(fromIndex index: [UInt8], url: String,
                                 indexRange: Range<Int64>) throws(DASHError) -> [MPDSegment] {
        func fail() -> DASHError { .invalidValue(element: "SegmentBase", attribute: "indexRange") }
        var at = 0
        func read(_ n: Int) throws(DASHError) -> UInt64 {
            guard at + n <= index.count else { throw fail() }
            var v: UInt64 = 0
            for k in 0..<n { v = v << 8 | UInt64(index[at + k]) }
            at += n
            return v
        }
        var size = try read(4)
        guard try read(4) == 0x7369_6478 else { throw fail() }  // "sidx"
        if size == 1 { size = try read(8) }
        let version = try read(1)
        at += 3  // flags
        _ = try read(4)  // reference_ID
        let timescale = Double(try read(4))
        at += version == 0 ? 4 : 8  // earliest_presentation_time
        let firstOffset = try read(version == 0 ? 4 : 8)
        at += 2  // reserved
        let count = Int(try read(2))
        guard size >= 12, size < 1 << 48, firstOffset < 1 << 48, timescale > 0, count <= MPDManifest.segmentLimit,
              indexRange.lowerBound < 1 << 48 else { throw fail() }
        // Offsets count from the first byte after the box.
        var offset = indexRange.lowerBound + Int64(size) + Int64(firstOffset)
        var segments: [MPDSegment] = []
        for _ in 0..<count {
            let reference = try read(4)
            let duration = try read(4)
            _ = try read(4)  // SAP
            let length = Int64(reference & 0x7FFF_FFFF)
            guard length > 0 else { throw fail() }
            segments.append(MPDSegment(url: url, range: offset..<(offset + length), duration: Double(duration) / timescale))
            offset += length
        }
        return segments
    }
}
