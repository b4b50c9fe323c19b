/// The proxy's own routes (`/_httpcache/ping`, `stats`, `metrics`, `admin/…`, `p/…`), used by the
/// CLI, answer in every mode: in reverse mode every other path is the origin's.
package enum OwnRoutes {
    package static let prefix = "/_httpcache"

    /// "/_httpcache/stats?x" → "/stats?x"; nil without the prefix and a slash.
    package static func unprefixed(_ target: String) -> String? {
        guard target.hasPrefix(prefix) else { return nil }
        let rest = target.dropFirst(prefix.count)
        return rest.hasPrefix("/") ? String(rest) : nil
    }
}
