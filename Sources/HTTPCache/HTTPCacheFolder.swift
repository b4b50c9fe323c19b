import CacheIO
import CacheStorage
import Logging

/// A cache folder opened without serving it, to list, remove, export and
/// import entries (what `httpcache cache …` does when no proxy runs).
///
/// Opening takes the folder's lock: it fails with a clear error while a proxy
/// (or another `HTTPCacheFolder`) has it, so there is never a second writer.
/// Use the proxy's own methods (`HTTPCacheServer.cachedResources()` …) then.
public final class HTTPCacheFolder: Sendable {
    private let operations: CacheOperations

    /// Opens `path`; `cacheKey` must be the mapping the proxy uses.
    public init(path: String, cacheKey: @escaping @Sendable (String) -> String = { $0 },
                logger: Logger = Logger(label: "httpcache")) throws {
        let loop = try EventLoop()
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
    public func cachedResources() -> [CachedResource] { operations.list() }
    /// Bytes held by the cache.
    public func cacheSize() -> Int64 { operations.totalSize() }
    public func removeResource(for url: String) throws { try operations.remove(url: url) }
    public func removeAll() { operations.removeAll() }
    /// Puts a completely cached resource at `path` (a hard link when possible).
    public func exportResource(for url: String, to path: String) throws { try operations.export(url: url, to: path) }
    /// Makes a local file the cached copy of `url`.
    public func importResource(for url: String, from path: String, contentType: String? = nil) throws {
        try operations.importFile(path, url: url, contentType: contentType)
    }
    /// Unpins what `preload(…pin…)` of `url` pinned; returns how many entries.
    @discardableResult
    public func unpin(_ url: String) -> Int { operations.unpin(url: url) }
}

extension HTTPCacheFolder {
    /// Where the proxy serving `path` listens and its admin token, if one does
    /// (read from the folder's lock file).
    public static func servingProxy(of path: String) -> (address: String, token: String)? {
        guard let owner = CacheLock.readOwner(folder: path), let address = owner.address,
              let token = owner.token else { return nil }
        return (address, token)
    }
}
