import CacheHTTP
import Glibc

/// One cached resource: metadata, sparse data file, bytes written so far. Loop thread only.
///
/// `available` is what the data file holds (served at once); `metadata.ranges` the durable subset,
/// the only one persisted: a crash can lose recent bytes, never claim bytes not on disk.
package final class Resource {
    package let key: String
    let entryKey: EntryKey
    let paths: EntryPaths
    var layout: Layout
    let route: UInt32  // the first 32 bits of its URL's primary key (see EntryIndex.Record.route)
    // Loop-confined, never accessed overlapping: no dynamic exclusivity check (read on every hit).
    @exclusivity(unchecked) package private(set) var metadata: ResourceMetadata
    @exclusivity(unchecked) package private(set) var available: RangeSet
    /// No byte stored and not a complete empty body (a stored 204 or empty 200 is its head).
    package var holdsNothing: Bool { available.isEmpty && totalLength != 0 }
    /// Readers and downloads using the resource; in use means not evictable.
    @exclusivity(unchecked) package var users = 0 {
        didSet { if users == 0 && leases == 0 { store.resourceBecameIdle(self) } }
    }
    /// Copies of its hit on other loops and their responses (PlainHit): kept from eviction, not
    /// removal (copies then stop; responses end on the open data file).
    package var leases = 0 {
        didSet { if leases == 0 && users == 0 { store.resourceBecameIdle(self) } }
    }
    /// Used or leased: not evictable, listed as in use.
    package var isBusy: Bool { users > 0 || leases > 0 }
    /// Bumped when the origin's version changed and the bytes went; older readers must stop.
    package private(set) var generation = 0
    /// Served, not kept: deleted once unused (refused by the content-type policy, too large, removed in use).
    package private(set) var isTransient = false
    /// When the origin last confirmed the cached version (store clock, this process only).
    package var validatedAt: Int64?
    /// Facts of this version's head and bytes, so a hit does not work them out again.
    @exclusivity(unchecked) package var derived = DerivedFacts()
    /// Gone from the store; nothing may be written for it any more.
    package internal(set) var isRemoved = false
    private var file: DataFile?
    /// This version's data file, kept after the descriptor closes: metadata goes only to it.
    private var fileIdentity: FileIdentity?
    var onDisk: Bool  // in the store's index (files may exist): set before the data file is created
    private unowned let store: ResourceStore
    var unflushedBytes: Int64 = 0
    /// When the oldest unflushed byte was written (ms; see `ResourceStore.flushDelay`).
    var unflushedSince: Int64 = 0
    var flushing = false
    var flushAgain = false
    var needsFlush = false
    var flushQueued = false

    /// Where a resource's metadata is kept.
    enum Layout {
        case twoFiles  // a `.meta` file beside the data file (older layout; attributes refused)
        /// Moving into the attribute (writes go there); the index says two files until `.meta` is gone.
        case converting
        case oneFile  // the data file's attribute
    }

    init(key: String, paths: EntryPaths, metadata: ResourceMetadata, store: ResourceStore, onDisk: Bool, route: UInt32,
         oneFile: Bool) {
        self.key = key
        self.layout = oneFile ? .oneFile : .twoFiles
        guard let entryKey = EntryKey(hex: key) else { preconditionFailure("a store key is 64 hex digits: \(key)") }
        self.entryKey = entryKey
        self.paths = paths
        self.route = route
        self.metadata = metadata
        self.available = metadata.ranges
        self.store = store
        self.onDisk = onDisk
    }

    package var url: String { metadata.url }
    package var totalLength: Int64? { metadata.totalLength }
    package var dataPath: String { paths.data(named: metadata.dataName) }
    var version: Int { EntryPaths.version(ofDataName: metadata.dataName) ?? 0 }
    /// What the size limit counts: nothing while not kept.
    var countedBytes: Int64 { isTransient ? 0 : available.byteCount }
    package var isComplete: Bool {
        guard let totalLength else { return false }
        return available.covers(0..<totalLength)
    }

    /// The data file, opened (and its folder created) on first use.
    package func dataFile() throws(StorageError) -> DataFile {
        if let file { return file }
        store.makeRoomForFile()
        if !onDisk {
            guard store.group.folders.prepare(paths) else {
                let code = errno
                throw StorageError("cannot create the folder of \(dataPath): \(FileIO.errorText(code))", code: code)
            }
            store.entryCreated(self)  // in the index and journal before the file exists
            onDisk = true
            // A brand-new resource takes a ready-made spare file (no create on the loop).
            if let adopted = store.spare.adopt(as: dataPath) {
                adopted.use(store.group.keys?.cipher(key: key, version: version))
                return opened(adopted)
            }
        }
        return opened(try DataFile(path: dataPath, cipher: store.group.keys?.cipher(key: key, version: version)))
    }

    private func opened(_ dataFile: DataFile) -> DataFile {
        file = dataFile
        fileIdentity = dataFile.identity
        store.openFiles += 1
        return dataFile
    }

    /// Takes a data file opened on the pool (see `ResourceStore.whenAtHand`).
    func use(opened dataFile: DataFile) {
        guard file == nil else { return }
        store.makeRoomForFile()
        _ = opened(dataFile)
    }

    package var hasOpenFile: Bool { file != nil }

    /// Closes the data file when nothing uses it (responses keep their own reference).
    func closeFile() {
        if file != nil { store.openFiles -= 1 }
        file = nil
    }

    package func setInfo(totalLength: Int64?, contentType: String?, etag: String?, lastModified: String?) {
        changingComplete()
        derived = DerivedFacts()
        metadata.totalLength = totalLength
        metadata.contentType = contentType
        metadata.etag = etag
        metadata.lastModified = lastModified
        if let totalLength {
            available.clip(to: totalLength)
            store.recount(self)
        }
        needsFlush = true
    }

    /// Records the origin's response head as the cache keeps it (RFC 9111 §3).
    package func setStoredHead(_ head: StoredResponseHead?) {
        changingComplete()
        metadata.head = head
        derived.freshness = nil
        derived.transparentFreshness = nil
        derived.serving = nil
        derived.servingAged = nil
        derived.variance = nil
        needsFlush = true
    }

    /// The origin's version changed: every byte and validator goes; the old data file is unlinked
    /// (responses keep their descriptor), a new one made on the next write.
    package func reset(url: String) {
        changingComplete()
        available = RangeSet()
        store.unlinkLater(dataPath)
        var fresh = ResourceMetadata(url: url, lastAccess: metadata.lastAccess)
        fresh.dataName = EntryPaths.dataName(version: (version + 1) & EntryPaths.maxVersion)
        fresh.pin = metadata.pin  // a new version of a pinned resource stays pinned
        metadata = fresh
        store.recount(self)
        generation += 1
        validatedAt = nil
        derived = DerivedFacts()
        closeFile()
        fileIdentity = nil
        needsFlush = true
    }

    /// Only complete resources go to other loops as hits (StoreEpoch): changing one tells them.
    private func changingComplete() { if isComplete { store.epoch.bump() } }

    /// Pins the resource for the preload of `root` (nil unpins): never evicted by the size limit.
    package func setPin(_ root: String?) {
        guard metadata.pin != root else { return }
        metadata.pin = root
        store.recount(self)
        needsFlush = true
        store.flush(self)
    }

    package var isPinned: Bool { metadata.pin != nil }

    /// The data file cannot be opened any more (folder deleted): its bytes are gone, same version.
    package func lostData() {
        changingComplete()
        available = RangeSet()
        metadata.ranges = RangeSet()
        store.recount(self)
        closeFile()
    }

    /// Keeps the resource out of the cache: deleted once unused, its bytes uncounted.
    package func makeTransient() {
        guard !isTransient else { return }
        changingComplete()
        isTransient = true
        store.recount(self)
        needsFlush = false
    }

    /// Stores bytes received from the origin at their offset.
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StorageError) {
        guard bytes.count > 0 else { return }
        guard !isRemoved else { throw StorageError("resource was removed from the cache") }
        try dataFile().write(bytes, at: offset)
        let range = offset..<(offset + Int64(bytes.count))
        available.insert(range)
        guard !isTransient else { return }
        store.recount(self)
        let now = store.clock()
        if unflushedBytes == 0 { unflushedSince = now }
        unflushedBytes += Int64(bytes.count)
        needsFlush = true
        if unflushedBytes >= store.flushThreshold || now - unflushedSince >= store.flushDelay { store.flush(self) }
    }

    /// Bytes within `range` the metadata on disk claims: what a crash now would keep.
    package func recordedBytes(in range: Range<Int64>) -> Int64 {
        metadata.ranges.intersection(range).reduce(0) { $0 + Int64($1.count) }
    }

    /// Marks the resource as just used (LRU order; batched into the journal, no metadata write).
    package func touch() {
        metadata.lastAccess = store.clock()
        store.noteAccess(self)
    }

    /// Persists metadata soon (after the data it claims is synced).
    package func flush() { store.flush(self) }
    /// The metadata write a flush makes now: every byte written so far, and where it goes.
    func pendingWrite() -> MetadataWrite {
        var snapshot = metadata
        snapshot.ranges = available
        return MetadataWrite(metadata: snapshot, dataPath: dataPath, metaPath: paths.meta, keys: store.group.keys,
                             key: key, attribute: layout != .twoFiles, identity: fileIdentity)
    }

    func didFlush(_ snapshot: ResourceMetadata) {
        // A reset while the flush ran makes the snapshot stale: keep the new state.
        guard snapshot.dataName == metadata.dataName else { return }
        metadata.ranges = snapshot.ranges.intersection(available)
    }
}

extension RangeSet {
    package func intersection(_ other: RangeSet) -> RangeSet {
        var result = RangeSet()
        for range in ranges {
            for part in other.intersection(range) { result.insert(part) }
        }
        return result
    }
}

/// Per-version facts a reader would otherwise recompute on every request. In memory only.
package struct DerivedFacts: Sendable {
    package var headSample: [UInt8]?  // the first bytes once cached (content sniffing)
    package var isPlaylist: Bool?  // whether the resource is an HLS playlist; nil until decided
    package var isManifest: Bool?  // whether the resource is a DASH manifest; nil until decided
    /// For a live playlist, how long a copy may be reused (ms); `.some(nil)`: looked at, not live.
    package var liveReuse: Int64??
    /// Freshness under the proxy URLs' and the other modes' policy (`LoaderPolicy.transparentCache`).
    package var freshness: Freshness.Facts?
    package var transparentFreshness: Freshness.Facts?
    /// The stored end-to-end fields as hits replay them (Via added, no Age), also as head lines.
    package var serving: (fields: HTTPHeaders, lines: [UInt8])?
    /// `serving.fields` with an Age, shared by the hits of the second it is right in.
    package var servingAged: (age: Int, fields: HTTPHeaders)?
    /// Whether the stored head has Vary, and its Content-Encoding (read on every request).
    package var variance: (varies: Bool, coding: String?)?
    package init() {}
}
