import CacheHTTP

/// Which responses are followed, and where to.
package enum Redirects {
    /// 301, 302, 303, 307 and 308. We only send GET, so 303's "use GET" changes nothing.
    package static func isRedirect(_ status: Int) -> Bool {
        status == 301 || status == 302 || status == 303 || status == 307 || status == 308
    }

    /// The next URL for `location` (absolute or relative to `base`), unless it is unusable, revisits a URL of
    /// `chain` (the URLs fetched so far, the first one included), or `hops` already reached `limit`.
    package static func target(of location: String, from base: OriginURL, chain: [String], hops: Int,
                       limit: Int) -> Result<OriginURL, UpstreamError> {
        guard let target = base.resolving(location) else {
            return .failure(.redirect("\(base.string) sent an unusable Location: \(location)"))
        }
        if chain.contains(target.string) {
            let loop = (chain + [target.string]).joined(separator: " → ")
            return .failure(.redirect("redirect loop: \(loop)"))
        }
        guard hops < limit else {
            return .failure(.redirect("more than \(limit) redirects from \(chain[0])"))
        }
        return .success(target)
    }
}

/// Where redirected URLs ended up, so that later requests go there directly.
/// Bounded: the oldest entries go first. Loop thread only (owned by the client).
package struct RedirectMemory {
    private var targets: [String: OriginURL] = [:]
    private var order: [String] = []
    package let capacity: Int

    package init(capacity: Int = 4096) { self.capacity = capacity }

    /// Asked before every download: without any redirect remembered, the URL's string is not even built.
    package func target(for url: OriginURL) -> OriginURL? { targets.isEmpty ? nil : targets[url.string] }

    package mutating func remember(_ url: OriginURL, target: OriginURL) {
        if targets.updateValue(target, forKey: url.string) == nil {
            order.append(url.string)
            if order.count > capacity {
                let dropped = order.prefix(order.count - capacity)
                for key in dropped { targets[key] = nil }
                order.removeFirst(dropped.count)
            }
        }
    }

    package mutating func forget(_ url: OriginURL) {
        guard targets.removeValue(forKey: url.string) != nil else { return }
        order.removeAll { $0 == url.string }
    }
}
