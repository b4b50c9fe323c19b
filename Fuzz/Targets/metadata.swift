// Resource metadata files (the `meta` text beside each data file). The
// input is read two ways: as a file's bytes, decoded as the store does, and
// as the fields of a metadata value to encode. Beyond "no crash":
// - decoded metadata is consistent: a URL, ranges inside the length, a data
//   file name that stays in its folder;
// - decode(encode(x)) == x, byte-exact, for decoded values and for any
//   value whose fields hold what a URL or a header value can hold.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMetadata(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzRun(data, size) { input in
        if let decoded = ResourceMetadata(decoding: String(decoding: input, as: UTF8.self)) {
            checkConsistent(decoded)
            checkRoundTrip(decoded)
        }
        checkRoundTrip(metadata(from: input))
    }
}

private func checkConsistent(_ m: ResourceMetadata) {
    fuzzCheck(!m.url.isEmpty, "empty url")
    if let length = m.totalLength {
        fuzzCheck(length >= 0 && (m.ranges.ranges.last?.upperBound ?? 0) <= length, "ranges \(m.ranges) beyond \(length)")
    }
    fuzzCheck(!m.dataName.isEmpty && !m.dataName.contains("/") && m.dataName != "meta", "data name \(m.dataName)")
    for r in m.ranges.ranges { fuzzCheck(!r.isEmpty && r.lowerBound >= 0, "range \(r)") }
}

private func checkRoundTrip(_ m: ResourceMetadata) {
    let text = m.encoded()
    guard let back = ResourceMetadata(decoding: text) else {
        return fuzzCheck(false, "encoded metadata does not decode:\n\(text)")
    }
    let same = sameBytes(back.url, m.url) && back.totalLength == m.totalLength
        && sameOptional(back.contentType, m.contentType) && sameOptional(back.etag, m.etag)
        && sameOptional(back.lastModified, m.lastModified) && back.ranges == m.ranges
        && back.lastAccess == m.lastAccess && sameBytes(back.dataName, m.dataName)
    fuzzCheck(same, "decode(encode(x)) != x for\n\(text)\ndecoded as \(back)")
}

private func sameOptional(_ a: String?, _ b: String?) -> Bool {
    switch (a, b) {
    case (nil, nil): return true
    case let (x?, y?): return sameBytes(x, y)
    default: return false
    }
}

/// A valid metadata value from fuzzer bytes: a choice byte, then NUL-separated
/// strings for the URL, type, ETag, Last-Modified and data file name (decoded
/// from UTF-8 as header values are, without LF, which no URL or header value
/// holds), then numbers for the length, access time and ranges.
private func metadata(from input: UnsafeRawBufferPointer) -> ResourceMetadata {
    var fields = input.split(separator: 0, maxSplits: 5, omittingEmptySubsequences: false).map {
        String(decoding: $0.filter { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }
    while fields.count < 6 { fields.append("") }
    var choices = FuzzChoices(Array(fields[5].utf8))
    let present = choices.byte()
    func optional(_ bit: UInt8, _ s: String) -> String? { present & bit != 0 ? s : nil }

    var m = ResourceMetadata(url: fields[0].isEmpty ? "http://h/" : fields[0])
    m.contentType = optional(1, fields[1])
    m.etag = optional(2, fields[2])
    m.lastModified = optional(4, fields[3])
    let name = fields[4]
    if present & 8 != 0, !name.isEmpty, !name.contains("/"), name != "meta" { m.dataName = name }
    var limit = Int64.max - 1
    if present & 16 != 0 {
        limit = Int64(choices.below(1 << 16)) << Int64(choices.byte() % 40)
        m.totalLength = limit
    }
    m.lastAccess = Int64(bitPattern: UInt64(choices.below(1 << 16)) << 48 | UInt64(choices.below(1 << 16)))
    var ranges: [Range<Int64>] = []
    for _ in 0..<(Int(choices.byte()) % 5) where limit > 0 {
        let a = Int64(choices.below(1 << 16)) % limit, b = Int64(choices.below(1 << 16)) % limit
        ranges.append(min(a, b)..<(max(a, b) + 1))
    }
    m.ranges = RangeSet(ranges)
    return m
}
