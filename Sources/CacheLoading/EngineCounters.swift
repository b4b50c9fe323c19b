/// What the engine did with origins, counted where it happens (the loader). Plain integers: loop thread only.
package struct EngineCounters: Sendable, Equatable {
    /// Downloads started (their redirects, and a retry on a dead pooled connection, are not counted again).
    package var originRequests: UInt64 = 0
    package var originErrors: [OriginErrorCode: UInt64] = [:]
    package var bytesFromOrigin: UInt64 = 0
    /// Downloads running now (derived when the counters are read).
    package var activeDownloads = 0
    /// Resources evicted by the size limit (the store's count).
    package var evictions: UInt64 = 0

    package init() {}

    /// Adds another shard's counts (several loops).
    package mutating func add(_ other: EngineCounters) {
        originRequests += other.originRequests
        originErrors.merge(other.originErrors, uniquingKeysWith: +)
        bytesFromOrigin += other.bytesFromOrigin
        activeDownloads += other.activeDownloads
        evictions += other.evictions
    }
}
