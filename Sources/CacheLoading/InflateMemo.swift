/// Stored versions of gzip bodies whose inflate for a rewrite failed (larger
/// than `BodyTransform.rewriteCap` once inflated, or not decodable): each
/// version is tried once, not once per request (a small gzip bomb
/// otherwise costs a full inflate on every hit). Also keeps one inflate in
/// flight per version: requests arriving meanwhile wait for its outcome.
/// One per loop (the `Loader`'s); loop thread only.
package final class InflateMemo {
    package enum Decision: Equatable { case inflate, wait, undecodable }

    /// Versions known undecodable, oldest first past `capacity` forgotten.
    private var failed: Set<String> = []
    private var order: [String] = []
    private var inflating: [String: [(_ undecodable: Bool) -> Void]] = [:]
    private let capacity: Int

    package init(capacity: Int = 1024) { self.capacity = max(1, capacity) }

    /// The version key of a stored body: the entry's key and its validators,
    /// so a new version from the origin is tried afresh.
    package static func version(key: String, generation: Int, etag: String?, lastModified: String?,
                                length: Int64?) -> String {
        "\(key) \(generation) \(etag ?? "-") \(lastModified ?? "-") \(length.map(String.init) ?? "-")"
    }

    /// What to do with `version`: inflate it (the caller then calls
    /// `finished`), wait (`whenKnown` gets the outcome of the inflate in
    /// flight: if it worked, each waiter inflates its own copy, in
    /// parallel), or pass it unchanged (known undecodable).
    package func decide(_ version: String, whenKnown: @escaping (_ undecodable: Bool) -> Void) -> Decision {
        if failed.contains(version) { return .undecodable }
        if inflating[version] != nil {
            inflating[version]!.append(whenKnown)
            return .wait
        }
        inflating[version] = []
        return .inflate
    }

    /// The inflate of `version` finished; waiters learn how.
    package func finished(_ version: String, undecodable: Bool) {
        if undecodable && failed.insert(version).inserted {
            order.append(version)
            if order.count > capacity { failed.remove(order.removeFirst()) }
        }
        let waiters = inflating.removeValue(forKey: version) ?? []
        for waiter in waiters { waiter(undecodable) }
    }
}
