/// Drops named query parameters, so URLs differing only in volatile ones (signed CDN tokens)
/// share a cache key.
package enum QueryFilter {
    /// Never part of a cache key: CMCD values change with every request.
    package static let playerTelemetry: Set<String> = ["CMCD"]

    /// Names compare case-sensitively, undecoded, as servers see them; the rest keeps order and
    /// spelling; an emptied query loses its '?'. On the bytes: every cache key comes here.
    package static func removing(_ names: Set<String>, from url: String) -> String {
        let bytes = url.utf8
        guard !names.isEmpty, let question = bytes.firstIndex(of: UInt8(ascii: "?")) else { return url }
        let fragmentStart = bytes[question...].firstIndex(of: UInt8(ascii: "#")) ?? url.endIndex
        let query = url[url.index(after: question)..<fragmentStart]
        let kept = query.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false).filter { pair in
            let name = pair.prefix { $0 != UInt8(ascii: "=") }
            return !names.contains(String(decoding: name, as: UTF8.self))
        }.map { Substring($0) }
        let base = url[..<question]
        let fragment = url[fragmentStart...]
        return kept.isEmpty ? String(base + fragment) : String(base) + "?" + kept.joined(separator: "&") + fragment
    }
}
