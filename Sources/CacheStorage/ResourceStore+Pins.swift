// Pinned resources (a preload with --pin) are skipped by eviction but count toward the size limit,
// so pins alone can exceed it: the log says so once each time it happens.

extension ResourceStore {
    package var pinnedBytes: Int64 { index.pinnedBytes }

    /// Unpins every resource the preload of `url` pinned, and `url`'s own entry (under `cacheKey`);
    /// returns how many. Only pinned entries are read (the index flags them).
    @discardableResult
    package func unpin(url: String, cacheKey: String) -> Int {
        let own = storeKey(for: cacheKey)
        var count = 0
        for record in index.pinned {
            guard let resource = existing(storeKey: record.key.hex), resource.isPinned,
                  PinHolders.contains(url, in: resource.metadata.pin) || resource.key == own else { continue }
            resource.setPin(resource.key == own ? nil : PinHolders.removing(url, from: resource.metadata.pin))
            count += 1
        }
        if count > 0 {
            logger.info("unpinned", metadata: ["url": "\(url)", "resources": "\(count)"])
            warnedAboutPins = false
            evictIfNeeded()
        }
        return count
    }

    /// Releases `holder`'s (a download's tag) pins: deleted unless another holds it; deleted entries, bytes.
    package func release(holder: String) -> (entries: Int, bytes: Int64) {
        var deleted = 0
        var bytes: Int64 = 0
        for record in index.pinned {
            guard let resource = existing(storeKey: record.key.hex), PinHolders.contains(holder, in: resource.metadata.pin) else {
                continue
            }
            if let others = PinHolders.removing(holder, from: resource.metadata.pin) {
                resource.setPin(others)
            } else {
                deleted += 1
                bytes += resource.available.byteCount
                resource.setPin(nil)
                remove(resource)
            }
        }
        if deleted > 0 { logger.info("download released", metadata: ["holder": "\(holder)", "deleted": "\(deleted)", "bytes": "\(bytes)"]) }
        return (deleted, bytes)
    }

    /// The folder's pinned bytes: the log says once when they alone exceed the limit.
    func notePinned(_ pinned: Int64) {
        guard pinned > maxBytes else {
            warnedAboutPins = false
            return
        }
        guard !warnedAboutPins else { return }
        warnedAboutPins = true
        logger.warning("pinned resources alone exceed the cache limit",
                       metadata: ["pinned": "\(pinned)", "limit": "\(maxBytes)"])
    }
}

/// A resource's pin lists what holds it (a pinning preload's URL, downloads' tags),
/// space-separated: a resource shared by two downloads stays until both let go.
package enum PinHolders {
    package static func list(_ pin: String?) -> [Substring] { pin?.split(separator: " ") ?? [] }
    package static func contains(_ holder: String, in pin: String?) -> Bool { list(pin).contains { $0 == holder } }

    /// The pin with `holder` added (once).
    package static func adding(_ holder: String, to pin: String?) -> String {
        contains(holder, in: pin) ? pin! : (list(pin).map(String.init) + [holder]).joined(separator: " ")
    }

    /// The pin without `holder`; nil when nothing holds it any more.
    package static func removing(_ holder: String, from pin: String?) -> String? {
        let left = list(pin).filter { $0 != holder }
        return left.isEmpty ? nil : left.joined(separator: " ")
    }
}
