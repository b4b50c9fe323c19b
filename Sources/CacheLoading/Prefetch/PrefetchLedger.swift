import CacheIO
import Synchronization

/// Counts of prefetching, for /stats and /metrics.
package struct PrefetchCounts: Sendable, Equatable {
    /// Segments a prefetch brought into the cache (some of it from the origin).
    package var segments: UInt64 = 0
    /// Bytes those prefetches took from origins.
    package var bytes: UInt64 = 0
    /// Prefetched segments a player then asked for.
    package var used: UInt64 = 0
    /// Prefetched segments evicted before any player asked for them.
    package var evictedUnused: UInt64 = 0

    package init() {}
}

/// What every loop knows of prefetching without a hop to the first: whether it is on, which entries a
/// prefetch stored and their fate (hits say `detail=prefetched`), the counts. One per folder. Thread-safe.
package final class PrefetchLedger: Sendable {
    private struct State {
        var counts = PrefetchCounts()
        /// Store keys of prefetched entries: whether a player used each.
        var entries: [String: Bool] = [:]
        /// The keys in the order they were stored (the oldest are let go past `limit`).
        var order: [String] = []
    }

    private let state = Locked(State())
    private let depthNow = Atomic<Int>(0)
    private let knowsNow = Atomic<Bool>(false)

    /// `--prefetch`: 0 when off (requests are not looked at).
    package var depth: Int {
        get { depthNow.load(ordering: .relaxed) }
        set { depthNow.store(newValue, ordering: .relaxed) }
    }

    /// A player was served a playlist or MPD: until then no request is sent its way.
    package var playlistsServed: Bool {
        get { knowsNow.load(ordering: .relaxed) }
        set { knowsNow.store(newValue, ordering: .relaxed) }
    }
    /// Entries remembered; older ones are forgotten (their hits no longer say prefetched).
    static let limit = 65_536

    package var counts: PrefetchCounts { state.withLock { $0.counts } }

    /// A prefetch began storing `storeKey`: a player asking for it from now on uses it.
    package func started(_ storeKey: String) {
        state.withLock { state in
            if state.entries.updateValue(false, forKey: storeKey) == nil { state.order.append(storeKey) }
            if state.order.count > Self.limit {
                let dropped = state.order.prefix(state.order.count - Self.limit / 2)
                for key in dropped { state.entries[key] = nil }
                state.order.removeFirst(dropped.count)
            }
        }
    }

    /// A prefetch stored a segment, `bytes` of it from the origin.
    package func stored(bytes: Int64) {
        state.withLock { state in
            state.counts.segments += 1
            state.counts.bytes += UInt64(max(0, bytes))
        }
    }

    /// Whether a prefetch stored `storeKey` or is storing it (a hit of it says so).
    package func isPrefetched(_ storeKey: String) -> Bool {
        state.withLock { $0.entries[storeKey] != nil }
    }

    /// A player asked for `storeKey` (told in order with the starts): the first counts used.
    @discardableResult
    package func requested(_ storeKey: String) -> Bool {
        state.withLock { state in
            guard let used = state.entries[storeKey] else { return false }
            if !used {
                state.entries[storeKey] = true
                state.counts.used += 1
            }
            return true
        }
    }

    /// The entry `storeKey` left the cache by eviction.
    package func evicted(_ storeKey: String) {
        state.withLock { state in
            guard let used = state.entries.removeValue(forKey: storeKey) else { return }
            if !used { state.counts.evictedUnused += 1 }
        }
    }

    /// The entry was replaced or removed otherwise: its hits no longer come from a prefetch.
    package func forget(_ storeKey: String) {
        state.withLock { _ = $0.entries.removeValue(forKey: storeKey) }
    }
}
