import CacheIO
import CacheLoading
import CacheStorage
import Glibc
import Logging

/// A cache folder opened without serving it, to list, remove, export and
/// import entries (what `httpcache cache …` does when no proxy runs): the
/// calls of `MediaCache`, on one loop and with no origin client nor eviction.
///
/// Opening takes the folder's lock: it fails with `.busy` while a proxy
/// (or another cache) has it, so there is never a second writer; use that
/// cache's own calls then (`httpcache cache …` asks the proxy serving it).
public final class HTTPCacheFolder: Sendable {
    private let operations: CacheOperations

    /// Opens `path`; `cacheKey` must be the mapping the proxy uses.
    public init(path: String, cacheKey: @escaping @Sendable (String) -> String = { $0 },
                logger: Logger = Logger(label: "httpcache")) throws(HTTPCacheError) {
        let loop: EventLoop
        do { loop = try EventLoop() } catch { throw HTTPCacheError(.noMemory, "cannot start an event loop: \(error)") }
        let opened = loop.submitAndWait { () -> Result<LoopBound<ResourceStore>, StorageError> in
            do throws(StorageError) {
                // No eviction here: management should not delete entries by itself.
                let store = try ResourceStore(root: path, maxBytes: Int64.max, loop: loop, logger: logger)
                return .success(LoopBound(store, loop: loop))
            } catch {
                return .failure(error)
            }
        }
        switch opened {
        case .success(let store)?:
            operations = CacheOperations(stores: [store], group: store.unchecked.group, cacheKey: cacheKey)
        case .failure(let error)?:
            loop.shutdown()
            throw HTTPCacheError(error)
        case nil:
            loop.shutdown()
            throw HTTPCacheError(.closed, "cannot open \(path)")
        }
    }

    deinit { close() }

    /// Writes pending metadata and releases the folder's lock.
    public func close() {
        let store = operations.stores[0]
        let lock = store.loop.submitAndWait { () -> CacheLock in
            store.value.flushAllNow()
            return store.value.lock
        }
        store.loop.shutdown()
        lock?.release()
    }

    /// Every entry, most recently used first.
    public func cachedResources() -> [CachedResource] { operations.wait(operations.list).entries.map(CachedResource.init) }
    /// Bytes held by the cache.
    public func cacheSize() -> Int64 { operations.wait(operations.list).totalBytes }
    /// Removes one entry; `.notFound` when it is not cached.
    public func removeResource(for url: String) throws(HTTPCacheError) {
        try operations.wait { operations.remove(url: url, $0) }.get()
    }
    /// Removes every entry.
    public func removeAllResources() { operations.wait { done in operations.removeAll { done(()) } } }
    /// Puts a completely cached resource at `path` (a hard link when possible).
    public func exportResource(for url: String, to path: String) async throws(HTTPCacheError) {
        try await operations.answer { operations.export(url: url, to: path, $0) }.get()
    }
    /// Makes a local file the cached copy of `url` (an http or https URL).
    public func importResource(for url: String, from path: String, contentType: String? = nil) async throws(HTTPCacheError) {
        try await operations.answer { operations.importFile(path, url: url, contentType: contentType, $0) }.get()
    }
    /// Lets eviction take what a pinning preload of `url` kept; returns how many entries.
    @discardableResult
    public func unpin(_ url: String) -> Int { operations.wait { operations.unpin(url: url, $0) } }
}

extension HTTPCacheFolder {
    /// Where the proxy serving `path` listens and its admin token, if one
    /// does (read from the folder's lock file); nil when none does. Throws
    /// `.io` when the lock file cannot be read (a proxy of another user may hold it).
    public static func servingProxy(of path: String) throws(HTTPCacheError) -> (address: String, token: String)? {
        if access(path + "/lock", R_OK) != 0, errno != ENOENT {
            throw HTTPCacheError(.io, "cannot read \(path)/lock: \(String(cString: strerror(errno)))")
        }
        guard let owner = CacheLock.readOwner(folder: path), let address = owner.address,
              let token = owner.token else { return nil }
        return (address, token)
    }
}
