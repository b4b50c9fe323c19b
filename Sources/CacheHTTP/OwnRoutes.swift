/// The reserved path prefix of the proxy's own routes: `/_httpcache/ping`,
/// `/_httpcache/stats`, `/_httpcache/metrics`, `/_httpcache/admin/…` (and
/// `/_httpcache/p/…` proxy URLs) answer in every mode. In reverse mode
/// (`--origin`) every other path is the origin's, so these are the only way
/// to the proxy itself; they never reach the origin. The CLI always uses
/// them. Pure.
package enum OwnRoutes {
    package static let prefix = "/_httpcache"

    /// The target without the prefix ("/_httpcache/stats?x" → "/stats?x");
    /// nil when it does not start with the prefix and a slash.
    package static func unprefixed(_ target: String) -> String? {
        guard target.hasPrefix(prefix) else { return nil }
        let rest = target.dropFirst(prefix.count)
        return rest.hasPrefix("/") ? String(rest) : nil
    }
}
