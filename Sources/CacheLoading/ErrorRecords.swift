/// The last failure per origin URL, bounded (endless failing URLs must not grow memory).
/// About LRU in O(1): two generations; when the young one is full the old is dropped and
/// the young becomes old; a hit in the old moves back. At most `limit` entries.
package struct ErrorRecords {
    package let limit: Int
    private var young: [String: String] = [:]
    private var old: [String: String] = [:]

    package init(limit: Int = 1000) {
        precondition(limit >= 2)
        self.limit = limit
    }

    package var count: Int { young.count + old.count }

    package mutating func record(_ message: String, for url: String) {
        old[url] = nil
        young[url] = message
        rotateIfFull()
    }

    package mutating func message(for url: String) -> String? {
        if let hit = young[url] { return hit }
        guard let hit = old.removeValue(forKey: url) else { return nil }
        young[url] = hit
        rotateIfFull()
        return hit
    }

    package mutating func remove(_ url: String) {
        young[url] = nil
        old[url] = nil
    }

    package mutating func removeAll() {
        young = [:]
        old = [:]
    }

    private mutating func rotateIfFull() {
        guard young.count >= limit / 2 else { return }
        old = young
        young = [:]  // not keepingCapacity: a burst's tables are given back
    }
}
