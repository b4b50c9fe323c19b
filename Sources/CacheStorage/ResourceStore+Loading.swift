import Glibc

/// What the pool found for an entry not at hand: its metadata and its data
/// file opened, or no valid metadata (and the data version it named, if any).
enum LoadedEntry: Sendable {
    case valid(ResourceMetadata, DataFile?)
    case invalid(namedVersion: Int?)
}

// An entry's first use (after a restart, or once it was let go) reads its
// metadata file and opens its data file: on the pool, not on the loop, so a
// hit at a million entries costs the loop what it costs at a thousand. The
// request waits for that (one hop to the pool and back); requests for the
// same entry meanwhile wait for the same load.
extension ResourceStore {
    /// Runs `body` once the entry under `key` is at hand: at once (before
    /// returning) when it is already, or when the index has no such entry;
    /// else on the loop once its metadata is read and its data file opened
    /// on the pool (or it is found invalid and forgotten).
    package func whenAtHand(storeKey key: String, _ body: @escaping () -> Void) {
        if resources[key] != nil || index.count == 0 { return body() }
        guard let entryKey = EntryKey(hex: key), index.contains(entryKey) else { return body() }
        if loading[key] != nil {
            loading[key]!.append(body)
            return
        }
        loading[key] = [body]
        let (paths, keys) = (EntryPaths(resourcesRoot: resourcesRoot, key: key), group.keys)
        loop.offload({ Self.load(paths, keys: keys) }, done: { [weak self] loaded in
            self?.loaded(key, entryKey, loaded)
        })
    }

    /// Whether the entry is at hand (a lookup that reads nothing).
    package func atHand(storeKey key: String) -> Resource? { resources[key] }

    /// On the pool: the entry's metadata (ranges clipped to its data file)
    /// and its data file, opened.
    private static func load(_ paths: EntryPaths, keys: FolderKeys?) -> LoadedEntry {
        guard let stored = paths.readMetadata(keys: keys) else { return .invalid(namedVersion: nil) }
        guard !stored.metadata.ranges.isEmpty else { return .invalid(namedVersion: stored.version) }
        let cipher = keys?.cipher(key: paths.key, version: stored.version)
        // No file opens here only when it cannot: the first read opens it on the loop and says why.
        let file = try? DataFile(existing: paths.data(version: stored.version), cipher: cipher)
        return .valid(stored.metadata, file)
    }

    private func loaded(_ key: String, _ entryKey: EntryKey, _ loaded: LoadedEntry) {
        let waiting = loading.removeValue(forKey: key) ?? []
        defer { for body in waiting { body() } }
        // At hand already (a synchronous lookup came first), or gone (purged,
        // removed): what was loaded is dropped (the file closes with it).
        guard resources[key] == nil, let record = index.find(entryKey) else { return }
        switch loaded {
        case .invalid(let named):
            // A crash before its first flush, or files removed by hand: the
            // entry goes, its files through eviction's removal on the pool.
            guard let dropped = dropRecord(entryKey) else { return }
            let paths = EntryPaths(resourcesRoot: resourcesRoot, key: key)
            var files = [paths.meta, paths.data(version: dropped.version)]
            if let named, named != dropped.version { files.append(paths.data(version: named)) }
            queueRemoval(EvictedEntry(record: dropped, files: files))
        case .valid(var metadata, let file):
            metadata.lastAccess = record.lastAccess  // the index keeps the LRU order
            let resource = Resource(key: key, paths: EntryPaths(resourcesRoot: resourcesRoot, key: key),
                                    metadata: metadata, store: self, onDisk: true, route: record.route)
            keep(resource)
            // The record follows the metadata when a crash left them apart.
            recount(resource)
            if let file { resource.use(opened: file) }
        }
    }
}
