// Range and Content-Range header values. Beyond "no crash":
// - parsed specs are well-ordered, and resolve to non-empty ranges inside
//   the representation (or to nil);
// - formatting what was parsed and parsing that gives the same value back;
// - a Content-Range is self-consistent (last < total).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRanges(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzRun(data, size) { input in
        let value = String(decoding: input, as: UTF8.self)
        checkRange(value, lengths: lengths(input))
        checkContentRange(value)
    }
}

/// Representation lengths to resolve against: edge values and one that
/// depends on the input, so resolution near the parsed numbers is reached.
private func lengths(_ input: UnsafeRawBufferPointer) -> [Int64] {
    var derived: Int64 = 0
    for b in input.prefix(8) { derived = derived << 8 | Int64(b) }
    return [0, 1, 2, 1000, Int64.max - 1, Int64.max, derived & Int64.max, input.count > 12 ? Int64(input[12]) : 7]
}

private func checkRange(_ value: String, lengths: [Int64]) {
    guard let specs = RangeHeaderParser.parse(value) else { return }
    fuzzCheck(!specs.isEmpty, "empty spec list for \(value)")
    for spec in specs {
        switch spec {
        case let .closed(first, last): fuzzCheck(first >= 0 && first <= last, "closed \(first)-\(last)")
        case let .from(first): fuzzCheck(first >= 0, "from \(first)")
        case let .suffix(length): fuzzCheck(length >= 0, "suffix \(length)")
        }
        for length in lengths {
            guard let r = spec.resolve(length: length) else { continue }
            fuzzCheck(!r.isEmpty && r.lowerBound >= 0 && r.upperBound <= length, "\(spec) on \(length) gives \(r)")
        }
    }
    let formatted = "bytes=" + specs.map(format).joined(separator: ",")
    fuzzCheck(RangeHeaderParser.parse(formatted) == specs, "\(formatted) does not parse back to the specs of \(value)")
}

private func format(_ spec: ByteRangeSpec) -> String {
    switch spec {
    case let .closed(first, last): return "\(first)-\(last)"
    case let .from(first): return "\(first)-"
    case let .suffix(length): return "-\(length)"
    }
}

private func checkContentRange(_ value: String) {
    guard let parsed = ContentRange.parse(value) else { return }
    fuzzCheck(parsed.range != nil || parsed.total != nil, "both parts unknown in \(value)")
    if let r = parsed.range {
        fuzzCheck(!r.isEmpty && r.lowerBound >= 0, "range \(r) from \(value)")
        if let t = parsed.total { fuzzCheck(r.upperBound <= t, "range \(r) beyond total \(t)") }
    }
    if let t = parsed.total { fuzzCheck(t >= 0, "total \(t)") }
    let formatted = parsed.headerValue
    fuzzCheck(ContentRange.parse(formatted) == parsed, "\(formatted) does not parse back to \(value)")
    // Parsing is exact: without zeros (so without leading ones) the value is
    // already canonical, but for the case of "bytes".
    if !value.utf8.contains(UInt8(ascii: "0")) {
        fuzzCheck(sameBytes(String(value.dropFirst(5)), String(formatted.dropFirst(5))), "\(value) vs \(formatted)")
    }
}
