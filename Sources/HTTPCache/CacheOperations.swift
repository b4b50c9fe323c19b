import Glibc
import CacheIO
import CacheStorage

/// Cache management shared by a running `HTTPCacheServer` and an offline
/// `HTTPCacheFolder`: every operation runs on the loop of the store that
/// owns the resource, or on every store's for all of them.
struct CacheOperations: Sendable {
    /// The folder's stores by shard: one, or one per loop (see StoreGroup).
    let stores: [LoopBound<ResourceStore>]
    let group: StoreGroup
    let cacheKey: @Sendable (String) -> String

    /// The store owning `url`'s resource.
    private func owner(of url: String) -> LoopBound<ResourceStore> {
        stores[group.shard(ofKey: ResourceStore.key(for: cacheKey(url)))]
    }

    /// `body`'s answer from every store (none from a stopped loop).
    private func everyStore<T: Sendable>(_ body: @escaping @Sendable (ResourceStore) -> T) -> [T] {
        stores.compactMap { store in store.loop.submitAndWait { body(store.value) } }
    }

    func list() -> [CachedResource] {
        everyStore { $0.list() }.joined()
            .sorted { ($0.lastAccess, $0.url) > ($1.lastAccess, $1.url) }
            .map(CachedResource.init)
    }

    func totalSize() -> Int64 {
        everyStore { $0.totalBytes }.reduce(0, +)
    }

    func remove(url: String) throws(HTTPCacheError) {
        let key = cacheKey(url)
        let store = owner(of: url)
        let found = store.loop.submitAndWait { () -> Bool in
            guard let resource = store.value.find(cacheKey: key, url: url) else { return false }
            store.value.remove(resource)
            return true
        } ?? false
        if !found { throw HTTPCacheError(.notFound, "not cached: \(url)") }
    }

    func removeAll() {
        _ = everyStore { $0.removeAll() }
    }

    func export(url: String, to path: String) throws(HTTPCacheError) {
        let key = cacheKey(url)
        try wait(on: owner(of: url)) { store, done in
            guard let resource = store.find(cacheKey: key, url: url) else {
                return done(.failure(StorageError("not cached: \(url)", code: ENOENT)))
            }
            store.export(resource, to: path, completion: done)
        }
    }

    func importFile(_ path: String, url: String, contentType: String?) throws(HTTPCacheError) {
        let key = cacheKey(url)
        try wait(on: owner(of: url)) { store, done in
            store.importFile(path, url: url, cacheKey: key, contentType: contentType, completion: done)
        }
    }

    /// Unpins what the preload of `url` pinned (and `url`'s own entry), on
    /// every store: a preload's segments hash to different ones.
    func unpin(url: String) -> Int {
        let key = cacheKey(url)
        return everyStore { $0.unpin(url: url, cacheKey: key) }.reduce(0, +)
    }

    /// Runs an asynchronous store operation on the store's loop and waits for its end.
    private func wait(on store: LoopBound<ResourceStore>,
                      _ body: @escaping @Sendable (ResourceStore, @escaping (Result<Void, StorageError>) -> Void) -> Void) throws(HTTPCacheError) {
        let result = OneShot<Result<Void, StorageError>>()
        guard store.loop.execute({ body(store.value) { result.put($0) } }) else {
            throw HTTPCacheError(.closed, "the cache is closed")
        }
        if case .failure(let error) = result.take() { throw HTTPCacheError(error) }
    }
}
