import CacheHTTP
import CacheIO
import CacheStorage

/// One cache entry as the APIs and `GET /admin/cache` list it (Codable: one type on both ends).
package struct CacheEntry: Sendable, Codable, Equatable {
    package var url: String
    package var totalLength: Int64?
    package var contentType: String?
    package var cachedBytes: Int64
    /// Cached byte ranges, each `[first, last]` (inclusive).
    package var cachedRanges: [[Int64]]
    /// Milliseconds since 1970 of the last use.
    package var lastAccess: Int64
    package var isComplete: Bool
    package var isInUse: Bool
    /// Kept out of eviction by `preload --pin` until `cache unpin`.
    package var isPinned: Bool
    /// Which entry of its URL this is; nil from a proxy that did not say.
    package var variant: EntryVariant?
}

/// Every entry, most recently used first, with the folder's totals.
package struct CacheListing: Sendable, Codable, Equatable {
    package var entries: [CacheEntry]
    package var totalBytes: Int64
    package var maxBytes: Int64
}

/// The cache operations for every front end (`MediaCache`, the C API, the admin routes). Each runs on the
/// owning store's loop (or every store's) and calls `done` there (the last one to answer).
package struct CacheOperations: Sendable {
    /// The folder's stores by shard: one, or one per loop (see StoreGroup).
    package let stores: [LoopBound<ResourceStore>]
    let group: StoreGroup
    let cacheKey: @Sendable (String) -> String

    package init(stores: [LoopBound<ResourceStore>], group: StoreGroup, cacheKey: @escaping @Sendable (String) -> String) {
        self.stores = stores
        self.group = group
        self.cacheKey = cacheKey
    }

    package func list(_ done: @escaping @Sendable (CacheListing) -> Void) {
        everyStoreLater({ store, answer in
            store.list { infos in
                let entries = infos.map { info in
                    CacheEntry(url: info.url, totalLength: info.totalLength, contentType: info.contentType,
                               cachedBytes: info.cachedBytes,
                               cachedRanges: info.ranges.ranges.map { [$0.lowerBound, $0.upperBound - 1] },
                               lastAccess: info.lastAccess, isComplete: info.isComplete, isInUse: info.inUse,
                               isPinned: info.isPinned, variant: info.variant)
                }
                answer(CacheListing(entries: entries, totalBytes: store.totalBytes, maxBytes: store.maxBytes))
            }
        }) { listings in
            let entries = listings.flatMap(\.entries).sorted { ($0.lastAccess, $0.url) > ($1.lastAccess, $1.url) }
            done(CacheListing(entries: entries, totalBytes: listings.reduce(0) { $0 + $1.totalBytes },
                              maxBytes: listings.first?.maxBytes ?? 0))
        }
    }

    /// Removes every stored entry of `url` (what PURGE finds), each once its readers are done.
    package func remove(url: String, _ done: @escaping @Sendable (Result<Void, HTTPCacheError>) -> Void) {
        onOwner(of: url, done) { store, key in
            let found = store.everyEntry(cacheKey: key, url: url)
            guard !found.isEmpty else { return done(.failure(Self.notCached(url))) }
            for resource in found { store.remove(resource) }
            done(.success(()))
        }
    }

    /// PURGE: every stored variant of `url` goes at once, even in use (responses in flight
    /// end cleanly); `done` gets how many, `.notFound` when none.
    package func purge(url: String, _ done: @escaping @Sendable (Result<Int, HTTPCacheError>) -> Void) {
        onOwner(of: url, done) { store, _ in
            let purged = store.purge(url: url)
            done(purged > 0 ? .success(purged) : .failure(Self.notCached(url)))
        }
    }

    /// Purges every entry whose URL starts with `prefix`, on every store; `done` gets how many.
    package func purge(prefix: String, _ done: @escaping @Sendable (Int) -> Void) {
        everyStoreLater({ store, answer in store.purge(prefix: prefix, answer) }) { done($0.reduce(0, +)) }
    }

    /// Purges every entry `holder` pins, on every store; `done` gets how many.
    package func purge(holder: String, _ done: @escaping @Sendable (Int) -> Void) {
        everyStore({ $0.purge(holder: holder) }) { done($0.reduce(0, +)) }
    }

    package func removeAll(_ done: @escaping @Sendable () -> Void) {
        everyStore({ $0.removeAll() }) { _ in done() }
    }

    package func export(url: String, to path: String, _ done: @escaping @Sendable (Result<Void, HTTPCacheError>) -> Void) {
        onOwner(of: url, done) { store, key in
            // Any stored entry of the URL will do: the first complete one (the primary first).
            let found = store.everyEntry(cacheKey: key, url: url)
            guard let resource = found.first(where: \.isComplete) ?? found.first else {
                return done(.failure(Self.notCached(url)))
            }
            store.export(resource, to: path) { done($0.mapError(HTTPCacheError.init)) }
        }
    }

    package func importFile(_ path: String, url: String, contentType: String?,
                            _ done: @escaping @Sendable (Result<Void, HTTPCacheError>) -> Void) {
        // Only what a client could ask for is stored: the entry would never be served otherwise.
        guard OriginURL.parse(url) != nil else {
            return done(.failure(HTTPCacheError(.invalidArgument, "not an http or https URL: \(url)")))
        }
        onOwner(of: url, done) { store, key in
            store.importFile(path, url: url, cacheKey: key, contentType: contentType) { done($0.mapError(HTTPCacheError.init)) }
        }
    }

    /// Unpins what the preload of `url` pinned, on every store (its segments hash anywhere).
    package func unpin(url: String, _ done: @escaping @Sendable (Int) -> Void) {
        let key = cacheKey(url)
        everyStore({ $0.unpin(url: url, cacheKey: key) }) { done($0.reduce(0, +)) }
    }

    static func notCached(_ url: String) -> HTTPCacheError { HTTPCacheError(.notFound, "not cached: \(url)") }

    /// Runs `body` on the owning store's loop; `done` gets `.closed` when it has stopped.
    private func onOwner<T>(of url: String, _ done: @escaping @Sendable (Result<T, HTTPCacheError>) -> Void,
                            _ body: @escaping @Sendable (ResourceStore, String) -> Void) {
        let key = cacheKey(url)
        let store = stores[group.shard(ofKey: group.key(for: key))]
        if !store.loop.execute({ body(store.value, key) }) { done(.failure(HTTPCacheError(.closed, "the cache is closed"))) }
    }

    /// `body`'s answer from every store (none from a stopped loop), then `done` with them all.
    private func everyStore<T: Sendable>(_ body: @escaping @Sendable (ResourceStore) -> T,
                                         _ done: @escaping @Sendable ([T]) -> Void) {
        everyStoreLater({ store, answer in answer(body(store)) }, done)
    }

    /// As `everyStore`, for a body that answers later on its loop (after work on the pool).
    private func everyStoreLater<T: Sendable>(_ body: @escaping @Sendable (ResourceStore, @escaping (T) -> Void) -> Void,
                                              _ done: @escaping @Sendable ([T]) -> Void) {
        let stores = self.stores
        FanIn.gather(stores.count, start: { slot, answer in
            let store = stores[slot]
            return store.loop.execute { body(store.value) { answer($0) } }
        }, done: { done($0.compactMap { $0 }) })
    }

    /// Waits for an operation's answer (the C API's and the blocking Swift calls).
    package func wait<T: Sendable>(_ operation: (@escaping @Sendable (T) -> Void) -> Void) -> T {
        let answer = OneShot<T>()
        operation { answer.put($0) }
        return answer.take()
    }
}
