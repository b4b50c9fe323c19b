// Proxy URLs and origin URLs. The input is read two ways: as a proxy request
// target, and as "origin URL [LF redirect Location]". Beyond "no crash":
// - an origin URL that encodes to a proxy path decodes from it byte-exact
//   (with or without a query a player appends), and the path is a valid
//   request target;
// - a target that decodes re-encodes to a path that decodes to the same;
// - OriginURL values are normal: parse(url.string) == url, valid port,
//   lowercase host, path starting with "/"; so are resolved redirects;
// - base64url decoding is the exact inverse of encoding;
// - the base form (`/t/<base>/<tail>`), cut anywhere, decodes to the origin.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProxyURL(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzRun(data, size) { input in
        let text = String(decoding: input, as: UTF8.self)
        checkTarget(text)
        let parts = text.utf8.split(separator: ASCII.lf, maxSplits: 1, omittingEmptySubsequences: false)
        let origin = String(parts[0])!
        checkOrigin(origin)
        if parts.count == 2, let base = OriginURL.parse(origin) {
            checkResolved(base, String(parts[1])!)
        }
        checkBase64(Array(input))
    }
}

private func checkTarget(_ target: String) {
    guard let origin = ProxyURL.origin(fromTarget: target) else {
        fuzzCheck(ProxyURL.originURL(fromTarget: target) == nil, "originURL accepts what origin rejects: \(target)")
        return
    }
    fuzzCheck(ProxyURL.originURL(fromTarget: target) == OriginURL.parse(origin), "originURL and origin disagree")
    guard let path = ProxyURL.path(forOrigin: origin) else { return fuzzCheck(false, "no path for \(origin)") }
    fuzzCheck(ProxyURL.origin(fromTarget: path).map { sameBytes($0, origin) } == true, "\(path) does not decode to \(origin)")
}

private func checkOrigin(_ origin: String) {
    guard let url = OriginURL.parse(origin) else {
        fuzzCheck(ProxyURL.path(forOrigin: origin) == nil, "a path for an invalid origin: \(origin)")
        return
    }
    checkNormal(url, from: origin)
    for cut in [nil, UInt8(ascii: "$"), lastByte(of: origin)] as [UInt8?] {
        guard let basePath = ProxyURL.basePath(forOrigin: origin, cutBefore: cut) else { continue }
        fuzzCheck(basePath.hasPrefix("/t/") && ProxyURL.isProxyTarget(basePath), "bad base form \(basePath)")
        let decoded = ProxyURL.origin(fromTarget: basePath)
        fuzzCheck(decoded.map { sameBytes($0, url.string) } == true, "\(basePath) decodes to \(decoded ?? "nil"), not \(url.string)")
    }
    guard let path = ProxyURL.path(forOrigin: origin) else { return fuzzCheck(false, "no path for \(origin)") }
    fuzzCheck(path.hasPrefix("/p/") && path.utf8.allSatisfy { (0x21...0x7E).contains($0) }, "bad target \(path)")
    for target in [path, path + "?start=10&x=%2F", path + "?"] {
        let decoded = ProxyURL.origin(fromTarget: target)
        fuzzCheck(decoded.map { sameBytes($0, origin) } == true, "\(target) decodes to \(decoded ?? "nil"), not \(origin)")
        fuzzCheck(ProxyURL.originURL(fromTarget: target) == url, "\(target) gives another OriginURL")
    }
    // The name segment is one path segment and no dot-segment.
    let name = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).last.map { String($0)! }
    fuzzCheck(name != nil && name != "." && name != ".." && !name!.isEmpty, "bad name in \(path)")
}

private func checkNormal(_ url: OriginURL, from text: String) {
    fuzzCheck(url.scheme == "http" || url.scheme == "https", "scheme \(url.scheme)")
    fuzzCheck((1...65535).contains(url.port), "port \(url.port)")
    fuzzCheck(!url.host.isEmpty && sameBytes(url.host, ASCII.lowercased(url.host)), "host \(url.host)")
    fuzzCheck(url.pathAndQuery.utf8.first == UInt8(ascii: "/"), "path \(url.pathAndQuery)")
    fuzzCheck(!url.pathAndQuery.utf8.contains { $0 <= 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "#") }, "path \(url.pathAndQuery)")
    let again = OriginURL.parse(url.string)
    fuzzCheck(again == url, "\(text) normalizes to \(url.string), which parses to \(String(describing: again))")
}

private func checkResolved(_ base: OriginURL, _ location: String) {
    guard let resolved = base.resolving(location) else { return }
    checkNormal(resolved, from: "\(location) against \(base.string)")
}

private func checkBase64(_ bytes: [UInt8]) {
    var encoded: [UInt8] = []
    Base64URL.encode(bytes, into: &encoded)
    fuzzCheck(Base64URL.decode(encoded) == bytes, "base64url does not round-trip \(bytes.count) bytes")
    if let decoded = Base64URL.decode(bytes) {
        var again: [UInt8] = []
        Base64URL.encode(decoded, into: &again)
        fuzzCheck(again == bytes, "two encodings decode to the same bytes")
    }
}

/// A cut at the last byte of the URL, whatever it is.
private func lastByte(of s: String) -> UInt8? { s.utf8.last }
