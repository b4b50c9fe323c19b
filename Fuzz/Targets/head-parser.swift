// Request (and response) head parsing. Beyond "no crash":
// - a parsed head is made of valid parts (token method and names, visible
//   target, HTTP/1.x, values without controls or edge whitespace);
// - it ends where it says: the same bytes without what follows parse alike,
//   and no strict prefix of them is a complete head or an error (bytes
//   arriving one read at a time never get a valid request refused);
// - serializing a parsed head and parsing that gives it back.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHeadParser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzRun(data, size) { input in
        // Small limits too, so the limit paths are reached with short inputs.
        let small = HeadLimits(maxRequestLine: 64, maxHeaderBytes: 256, maxHeaderCount: 4)
        for limits in [HeadLimits(), small] {
            checkRequest(input, limits)
            checkResponse(input, limits)
        }
    }
}

private func checkRequest(_ input: UnsafeRawBufferPointer, _ limits: HeadLimits) {
    guard case .success(let parsed?) = RequestHeadParser.parse(input, limits: limits) else { return }
    let (head, consumed) = parsed
    fuzzCheck(consumed > 0 && consumed <= input.count, "consumed \(consumed) of \(input.count)")
    fuzzCheck(!head.method.isEmpty && head.method.utf8.allSatisfy(ASCII.isTokenChar), "method \(head.method)")
    fuzzCheck(!head.target.isEmpty && head.target.utf8.allSatisfy { (0x21...0x7E).contains($0) }, "target \(head.target)")
    fuzzCheck(head.version.major == 1 && (0...9).contains(head.version.minor), "version \(head.version)")
    checkFields(head.headers)

    let exact = UnsafeRawBufferPointer(rebasing: input[..<consumed])
    guard case .success(let again?) = RequestHeadParser.parse(exact, limits: limits) else {
        return fuzzCheck(false, "the head alone does not parse")
    }
    fuzzCheck(again.consumed == consumed && sameRequest(again.head, head), "the head alone parses differently")
    checkPrefixes(exact, limits) { RequestHeadParser.parse($0, limits: $1).map { $0 == nil } }

    let wire = serialize(head)
    let reparsed = wire.withUnsafeBytes { RequestHeadParser.parse($0, limits: roomy) }
    guard case .success(let round?) = reparsed else {
        return fuzzCheck(false, "serialized head does not parse: \(reparsed)")
    }
    fuzzCheck(round.consumed == wire.count && sameRequest(round.head, head), "serialized head parses differently")
}

private func checkResponse(_ input: UnsafeRawBufferPointer, _ limits: HeadLimits) {
    guard case .success(let parsed?) = ResponseHeadParser.parse(input, limits: limits) else { return }
    let (head, consumed) = parsed
    fuzzCheck(consumed > 0 && consumed <= input.count, "consumed \(consumed) of \(input.count)")
    fuzzCheck((100...999).contains(head.status), "status \(head.status)")
    fuzzCheck(head.version.major == 1, "version \(head.version)")
    fuzzCheck(!head.reason.utf8.contains { $0 == ASCII.cr || $0 == ASCII.lf }, "reason holds a line end")
    checkFields(head.headers)

    let exact = UnsafeRawBufferPointer(rebasing: input[..<consumed])
    guard case .success(let again?) = ResponseHeadParser.parse(exact, limits: limits) else {
        return fuzzCheck(false, "the response head alone does not parse")
    }
    fuzzCheck(again.consumed == consumed && again.head == head, "the response head alone parses differently")
    checkPrefixes(exact, limits) { ResponseHeadParser.parse($0, limits: $1).map { $0 == nil } }

    let wire = head.serialized()
    let reparsed = wire.withUnsafeBytes { ResponseHeadParser.parse($0, limits: roomy) }
    guard case .success(let round?) = reparsed else {
        return fuzzCheck(false, "serialized response head does not parse: \(reparsed)")
    }
    fuzzCheck(round.consumed == wire.count && round.head == head, "serialized response head parses differently")
}

/// Serializing may add bytes (": ", CRLF), so reparsing must not hit limits.
private let roomy = HeadLimits(maxRequestLine: 1 << 20, maxHeaderBytes: 1 << 20, maxHeaderCount: 1 << 16)

private func checkFields(_ headers: HTTPHeaders) {
    for (name, value) in headers {
        fuzzCheck(!name.isEmpty && name.utf8.allSatisfy(ASCII.isTokenChar), "field name \(name)")
        let v = Array(value.utf8)
        fuzzCheck(!v.contains { ($0 < 0x20 && $0 != ASCII.ht) || $0 == 0x7F }, "control in value of \(name)")
        fuzzCheck(!(v.first.map(ASCII.isOWS) ?? false) && !(v.last.map(ASCII.isOWS) ?? false), "untrimmed value of \(name)")
    }
}

/// A few strict prefixes of a complete head (all of them would be quadratic):
/// each must read as "incomplete" — `isIncomplete` gives true for that, false
/// for a complete head, and a failure for an error.
private func checkPrefixes(_ head: UnsafeRawBufferPointer, _ limits: HeadLimits,
                           _ isIncomplete: (UnsafeRawBufferPointer, HeadLimits) -> Result<Bool, HeadParseError>) {
    let n = head.count
    for cut in Set([0, 1, n / 2, n - 2, n - 1]) where cut >= 0 && cut < n {
        let outcome = isIncomplete(UnsafeRawBufferPointer(rebasing: head[..<cut]), limits)
        fuzzCheck(outcome == .success(true), "prefix of \(cut)/\(n) bytes of a valid head gives \(outcome)")
    }
}

private func sameRequest(_ a: HTTPRequestHead, _ b: HTTPRequestHead) -> Bool {
    guard sameBytes(a.method, b.method), sameBytes(a.target, b.target), a.version == b.version,
          a.headers.count == b.headers.count else { return false }
    return zip(a.headers, b.headers).allSatisfy { sameBytes($0.name, $1.name) && sameBytes($0.value, $1.value) }
}

private func serialize(_ head: HTTPRequestHead) -> [UInt8] {
    var out = Array("\(head.method) \(head.target) HTTP/\(head.version.major).\(head.version.minor)\r\n".utf8)
    for (name, value) in head.headers { out += Array("\(name): \(value)\r\n".utf8) }
    out += Array("\r\n".utf8)
    return out
}
