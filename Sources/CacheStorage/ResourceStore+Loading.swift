import Glibc

/// What the pool found for an entry not at hand: its metadata, its data
/// file opened and its first bytes (content sniffing), or no valid metadata
/// (and the data version it named, if any).
enum LoadedEntry: Sendable {
    case valid(ResourceMetadata, DataFile?, sample: [UInt8]?)
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
        loadQueue.append(entryKey)
        startLoads()
    }

    /// Most entries one task on the pool loads, and most such tasks at once
    /// (the pool's four threads): under load, first uses share a task (one
    /// wake-up of the pool and one of the loop for several), and a slow disk
    /// still has four reads going. (64 × 2 measured 5–10% fewer hits at
    /// 80,000 entries than 16 × 4.)
    static let loadBatch = 16
    static let loadsAtOnce = 4

    private func startLoads() {
        while loadsInFlight < Self.loadsAtOnce && !loadQueue.isEmpty {
            let batch = Array(loadQueue.prefix(Self.loadBatch))
            loadQueue.removeFirst(batch.count)
            loadsInFlight += 1
            let (root, keys) = (resourcesRoot, group.keys)
            loop.offload({
                batch.map { Self.load(EntryPaths(resourcesRoot: root, key: $0.hex), keys: keys) }
            }, done: { [weak self] results in
                guard let self else { return }
                self.loadsInFlight -= 1
                for (entryKey, result) in zip(batch, results) { self.loaded(entryKey.hex, entryKey, result) }
                self.startLoads()
            })
        }
    }

    /// Whether the entry is at hand (a lookup that reads nothing).
    package func atHand(storeKey key: String) -> Resource? { resources[key] }

    /// Bytes of a body's start read with its metadata: what the proxy's
    /// content sniffing (playlist, manifest) looks at.
    package static let sampleBytes: Int64 = 512

    /// On the pool: the entry's metadata (ranges clipped to its data file),
    /// its data file opened, and its first bytes when stored.
    private static func load(_ paths: EntryPaths, keys: FolderKeys?) -> LoadedEntry {
        var file: DataFile?
        let read = paths.readMetadata(keys: keys) { version in
            // No file opens here only when it cannot: the first read opens it on the loop and says why.
            file = try? DataFile(existing: paths.data(version: version), cipher: keys?.cipher(key: paths.key, version: version))
            var info = stat()
            guard let fd = file?.fd, fstat(fd, &info) == 0 else { return nil }
            return Int64(info.st_size)
        }
        guard let stored = read else { return .invalid(namedVersion: nil) }
        let metadata = stored.metadata
        guard !metadata.ranges.isEmpty else { return .invalid(namedVersion: stored.version) }
        // (The file is this thread's alone until the loop takes it: decrypting here is safe.)
        var sample: [UInt8]?
        if let file, let total = metadata.totalLength, total > 0 {
            let count = min(total, sampleBytes)
            if metadata.ranges.covers(0..<count) { sample = file.read(0..<count) }
        }
        return .valid(metadata, file, sample: sample)
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
        case .valid(var metadata, let file, let sample):
            metadata.lastAccess = record.lastAccess  // the index keeps the LRU order
            let resource = Resource(key: key, paths: EntryPaths(resourcesRoot: resourcesRoot, key: key),
                                    metadata: metadata, store: self, onDisk: true, route: record.route)
            keep(resource)
            // The record follows the metadata when a crash left them apart.
            recount(resource)
            if let file { resource.use(opened: file) }
            resource.derived.headSample = sample
        }
    }
}
