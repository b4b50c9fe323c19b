// Pinned resources (kept by a preload with --pin) are skipped by eviction but
// still count toward the size limit, so the limit can be exceeded by pins
// alone: the log says so once each time it happens.

extension ResourceStore {
    /// Bytes of pinned resources.
    package var pinnedBytes: Int64 { index.pinnedBytes }

    /// Unpins every resource pinned by the preload of `url`, and `url`'s own
    /// entry (`cacheKey` its cache key). Returns how many were unpinned.
    /// Only pinned entries are read (the index flags them).
    @discardableResult
    package func unpin(url: String, cacheKey: String) -> Int {
        let own = storeKey(for: cacheKey)
        var count = 0
        for record in index.pinned {
            guard let resource = existing(storeKey: record.key.hex), resource.isPinned,
                  resource.metadata.pin == url || resource.key == own else { continue }
            resource.setPin(nil)
            count += 1
        }
        if count > 0 {
            logger.info("unpinned", metadata: ["url": "\(url)", "resources": "\(count)"])
            warnedAboutPins = false
            evictIfNeeded()
        }
        return count
    }

    /// `pinned` bytes are pinned (in the whole folder): the log says once
    /// when that alone exceeds the limit.
    func notePinned(_ pinned: Int64) {
        if pinned > maxBytes {
            if !warnedAboutPins {
                warnedAboutPins = true
                logger.warning("pinned resources alone exceed the cache limit",
                               metadata: ["pinned": "\(pinned)", "limit": "\(maxBytes)"])
            }
        } else {
            warnedAboutPins = false
        }
    }
}
