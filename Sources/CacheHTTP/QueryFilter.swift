/// Drops named query parameters from a URL, so that URLs differing only in
/// volatile parameters (signed CDN tokens) map to one cache key.
package enum QueryFilter {
    /// Query arguments of player telemetry, never part of a cache key: CMCD
    /// (CTA-5004 Common Media Client Data, `?CMCD=bl%3D2000%2Csid%3D...`),
    /// whose values change with every request.
    package static let playerTelemetry: Set<String> = ["CMCD"]

    /// `url` without the parameters in `names` (compared case-sensitively,
    /// before percent-decoding, as servers see them). Other parameters keep
    /// their order and spelling; a query left empty is removed with its '?'.
    package static func removing(_ names: Set<String>, from url: String) -> String {
        // On the bytes: every request's cache key comes here, and most URLs have no query.
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
