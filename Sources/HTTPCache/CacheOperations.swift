import Glibc
import CacheIO
import CacheStorage

/// Cache management shared by a running `HTTPCacheServer` and an offline
/// `HTTPCacheFolder`: every operation runs on the loop that owns the store.
struct CacheOperations: Sendable {
    let loop: EventLoop
    let store: LoopBound<ResourceStore>
    let cacheKey: @Sendable (String) -> String

    func list() -> [CachedResource] {
        loop.submitAndWait { store.value.list().map(CachedResource.init) } ?? []
    }

    func totalSize() -> Int64 {
        loop.submitAndWait { store.value.totalBytes } ?? 0
    }

    func remove(url: String) throws(HTTPCacheError) {
        let key = cacheKey(url)
        let found = loop.submitAndWait { () -> Bool in
            guard let resource = store.value.find(cacheKey: key, url: url) else { return false }
            store.value.remove(resource)
            return true
        } ?? false
        if !found { throw HTTPCacheError(.notFound, "not cached: \(url)") }
    }

    func removeAll() {
        _ = loop.submitAndWait { store.value.removeAll() }
    }

    func export(url: String, to path: String) throws(HTTPCacheError) {
        let key = cacheKey(url)
        try wait { store, done in
            guard let resource = store.find(cacheKey: key, url: url) else {
                return done(.failure(StorageError("not cached: \(url)", code: ENOENT)))
            }
            store.export(resource, to: path, completion: done)
        }
    }

    func importFile(_ path: String, url: String, contentType: String?) throws(HTTPCacheError) {
        let key = cacheKey(url)
        try wait { store, done in
            store.importFile(path, url: url, cacheKey: key, contentType: contentType, completion: done)
        }
    }

    /// Runs an asynchronous store operation on the loop and waits for its end.
    private func wait(_ body: @escaping @Sendable (ResourceStore, @escaping (Result<Void, StorageError>) -> Void) -> Void) throws(HTTPCacheError) {
        let result = OneShot<Result<Void, StorageError>>()
        let store = self.store
        guard loop.execute({ body(store.value) { result.put($0) } }) else {
            throw HTTPCacheError(.closed, "the cache is closed")
        }
        if case .failure(let error) = result.take() { throw HTTPCacheError(error) }
    }
}
