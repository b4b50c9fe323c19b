extension CacheOperations {
    /// Unpins what the preload of `url` pinned (and `url`'s own entry).
    func unpin(url: String) -> Int {
        let key = cacheKey(url)
        return loop.submitAndWait { store.value.unpin(url: url, cacheKey: key) } ?? 0
    }
}
