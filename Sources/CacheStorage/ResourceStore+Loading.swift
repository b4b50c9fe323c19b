import Glibc

/// What the pool found for an entry not at hand: metadata (one file or not), data file opened,
/// first bytes (content sniffing); or no valid metadata (and the data version it named).
enum LoadedEntry: Sendable {
    case valid(ResourceMetadata, DataFile?, sample: [UInt8]?, oneFile: Bool)
    case invalid(namedVersion: Int?)
}

// An entry's first use (after a restart, or once let go) reads its metadata and opens its data file
// on the pool, so a hit at a million entries costs the loop what it costs at a thousand. The request
// waits one hop; requests for the same entry share the load.
extension ResourceStore {
    /// Runs `body` once the entry is at hand: now when it is (or the index lacks it), else once loaded.
    package func whenAtHand(storeKey key: String, _ body: @escaping () -> Void) {
        if resources[key] != nil { return body() }
        if !afterRemoval.isEmpty, let entryKey = EntryKey(hex: key), afterRemoval[entryKey] != nil {
            afterRemoval[entryKey]!.append(body)
            return
        }
        if index.count == 0 { return body() }
        guard let entryKey = EntryKey(hex: key), index.contains(entryKey) else { return body() }
        if loading[key] != nil {
            loading[key]!.append(body)
            return
        }
        loading[key] = [body]
        loadQueue.append(entryKey)
        // Started once this turn's requests are in: one task (a pool round trip) for all.
        guard !loadsStartDue else { return }
        loadsStartDue = true
        loop.executeLater { [weak self] in
            self?.loadsStartDue = false
            self?.startLoads()
        }
    }

    /// Most entries a pool task loads, and tasks at once (the pool's four threads): first uses share
    /// wake-ups, a slow disk has four reads going (64 × 2: 5–10% fewer hits at 80,000 entries).
    static let loadBatch = 16
    static let loadsAtOnce = 4

    private func startLoads() {
        while loadsInFlight < Self.loadsAtOnce && !loadQueue.isEmpty {
            let batch = Array(loadQueue.prefix(Self.loadBatch))
            loadQueue.removeFirst(batch.count)
            loadsInFlight += 1
            let (root, keys) = (resourcesRoot, group.keys)
            // The layout and version the index names: a one-file entry's file is opened without a lookup.
            let layouts = batch.map { key in index.find(key).map { ($0.isOneFile, $0.version) } ?? (false, 0) }
            loop.offload({
                zip(batch, layouts).map { key, layout in
                    Self.load(EntryPaths(resourcesRoot: root, key: key.hex), oneFile: layout.0, version: layout.1, keys: keys)
                }
            }, done: { [weak self] results in
                guard let self else { return }
                self.loadsInFlight -= 1
                for (entryKey, result) in zip(batch, results) { self.loaded(entryKey.hex, entryKey, result) }
                self.startLoads()
            })
        }
    }

    package func atHand(storeKey key: String) -> Resource? { resources[key] }  // reads nothing

    /// Bytes of a body's start read with its metadata, for content sniffing (playlist, manifest).
    package static let sampleBytes: Int64 = 512

    /// On the pool: metadata (clipped to the data file), data file opened, first bytes if stored;
    /// the indexed layout first, then the other (as `EntryPaths.readMetadata`).
    private static func load(_ paths: EntryPaths, oneFile: Bool, version: Int, keys: FolderKeys?) -> LoadedEntry {
        var file: DataFile?
        var found: (metadata: ResourceMetadata, version: Int, oneFile: Bool)?
        func openFile(_ version: Int) {
            // No file opens here only when it cannot: the first read opens it on the loop and says why.
            file = try? DataFile(existing: paths.data(version: version), cipher: keys?.cipher(key: paths.key, version: version))
        }
        func attribute() {
            if let fd = file?.fd, let metadata = paths.attributeMetadata(fd: fd, keys: keys, version: version) {
                found = (metadata, version, true)
            }
        }
        if oneFile {
            openFile(version)
            attribute()
        }
        if found == nil {
            if let stored = paths.readMetaFile(keys: keys) {
                if file == nil || stored.version != version { openFile(stored.version) }
                found = (stored.metadata, stored.version, false)
            } else if !oneFile && FileIO.fileSize(paths.meta) == nil {
                openFile(version)  // no `.meta` file: a conversion removed it before the journal said so
                attribute()
            }
        }
        guard var stored = found else { return .invalid(namedVersion: nil) }
        stored.metadata.ranges.clip(to: file?.sizeWhenOpened ?? 0)
        let metadata = stored.metadata
        guard !metadata.ranges.isEmpty else { return .invalid(namedVersion: stored.version) }
        // (The file is this thread's alone until the loop takes it: decrypting here is safe.)
        var sample: [UInt8]?
        if let file, let total = metadata.totalLength, total > 0 {
            let count = min(total, sampleBytes)
            if metadata.ranges.covers(0..<count) { sample = file.read(0..<count) }
        }
        return .valid(metadata, file, sample: sample, oneFile: stored.oneFile)
    }

    private func loaded(_ key: String, _ entryKey: EntryKey, _ loaded: LoadedEntry) {
        var waiting = loading.removeValue(forKey: key) ?? []
        defer { for body in waiting { body() } }
        // At hand already (a synchronous lookup came first), or gone: the load is dropped.
        guard resources[key] == nil, let record = index.find(entryKey) else { return }
        switch loaded {
        case .invalid(let named):
            // A crash before its first flush, or files removed by hand: its files go as evicted ones.
            guard let dropped = dropRecord(entryKey) else { return }
            let paths = EntryPaths(resourcesRoot: resourcesRoot, key: key)
            // Both layouts' names: a crash may have left the entry between them.
            var files = [paths.meta, paths.data(version: dropped.version)]
            if let named, named != dropped.version { files.append(paths.data(version: named)) }
            // Its requests go on once the files are gone, so the entry they make is kept.
            afterRemoval[entryKey, default: []] += waiting
            waiting = []
            queueRemoval(EvictedEntry(record: dropped, files: files))
        case .valid(let metadata, let file, let sample, let oneFile):
            let resource = keepStored(key, record, metadata, oneFile: oneFile)
            if let file { resource.use(opened: file) }
            resource.derived.headSample = sample
        }
    }
}
