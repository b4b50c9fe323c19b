/// How a response was answered; the raw values are stable outputs (`/stats`, `/metrics`, access log).
package enum CacheStatus: String, Sendable, Hashable, CaseIterable {
    case hit = "HIT"
    case miss = "MISS"
    /// Some bytes from the cache, the missing gaps from the origin.
    case partial = "PARTIAL"
    /// Answered without the cache: /ping, /stats, admin, errors found before any lookup.
    case bypass = "BYPASS"

    /// A response with no body bytes at all (HEAD, 416, a 304-like answer) is a hit: the cache answered it.
    package static func classify(fromCache: UInt64, fromOrigin: UInt64) -> CacheStatus {
        switch (fromCache > 0, fromOrigin > 0) {
        case (_, false): return .hit
        case (false, true): return .miss
        case (true, true): return .partial
        }
    }
}
