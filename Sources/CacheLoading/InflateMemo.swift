/// Stored gzip versions whose inflate for a rewrite failed (over `rewriteCap`, or not
/// decodable): each is tried once, not per request (a small gzip bomb would cost a full
/// inflate every hit); one inflate in flight per version, others wait. Loop thread only.
package final class InflateMemo {
    package enum Decision: Equatable { case inflate, wait, undecodable }

    /// Versions known undecodable, oldest first past `capacity` forgotten.
    private var failed: Set<String> = []
    private var order: [String] = []
    private var inflating: [String: [(_ undecodable: Bool) -> Void]] = [:]
    private let capacity: Int

    package init(capacity: Int = 1024) { self.capacity = max(1, capacity) }

    /// The entry's key and validators: a new version from the origin is tried afresh.
    package static func version(key: String, generation: Int, etag: String?, lastModified: String?,
                                length: Int64?) -> String {
        "\(key) \(generation) \(etag ?? "-") \(lastModified ?? "-") \(length.map(String.init) ?? "-")"
    }

    /// Inflate (then call `finished`), wait (`whenKnown` gets the outcome; if it worked
    /// each waiter inflates its own copy), or pass unchanged (known undecodable).
    package func decide(_ version: String, whenKnown: @escaping (_ undecodable: Bool) -> Void) -> Decision {
        if failed.contains(version) { return .undecodable }
        if inflating[version] != nil {
            inflating[version]!.append(whenKnown)
            return .wait
        }
        inflating[version] = []
        return .inflate
    }

    package func finished(_ version: String, undecodable: Bool) {
        if undecodable && failed.insert(version).inserted {
            order.append(version)
            if order.count > capacity { failed.remove(order.removeFirst()) }
        }
        let waiters = inflating.removeValue(forKey: version) ?? []
        for waiter in waiters { waiter(undecodable) }
    }
}
