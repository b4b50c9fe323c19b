import CacheIO
import Glibc
import Logging

/// One shard of a cache folder (`StoreGroup`), on its loop: each entry a sparse data file, its metadata in an
/// attribute (older layout: a `.meta` file), in hashed folders keyed by the SHA-256 of its cache key, under a
/// byte limit with LRU eviction. Each entry is a 64-byte `EntryIndex` record; its metadata is read on use and
/// kept while in use or recently used (`resources`, bounded). Loop thread only.
package final class ResourceStore {
    package let root: String
    package let loop: EventLoop
    let logger: Logger
    package let group: StoreGroup
    package let shardIndex: Int
    package var lock: CacheLock { group.lock }
    package var epoch: StoreEpoch { group.epoch }
    package var maxBytes: Int64  // the most bytes kept on disk once downloads settle (by all shards together)
    /// Unflushed bytes after which metadata is written during a download.
    package var flushThreshold: Int64 = 8 << 20
    /// Milliseconds a received byte may wait unrecorded while more arrive; the next write after
    /// flushes (a stalled stream waits for the 5 s timer). Bounds what a crash loses, and how far
    /// progress (recorded bytes only) lags (issue 35: 3 s of a 500 KB/s download were lost).
    package var flushDelay: Int64 = 2_000
    /// Every entry of this shard: the one owner of what is stored, its bytes and the LRU order.
    // Loop-confined, never accessed overlapping: no dynamic exclusivity check (looked up on every request).
    @exclusivity(unchecked) package private(set) var index: EntryIndex
    /// Entries in use or recently used, by store key; idle ones past `maxIdleResources` are let go.
    @exclusivity(unchecked) package private(set) var resources: [String: Resource] = [:]
    /// Idle resources kept with their metadata (a hit of one reads nothing).
    package var maxIdleResources = 2048
    /// Bytes of this shard's entries (what the size limit counts).
    package var totalBytes: Int64 { index.totalBytes }
    package var count: Int { index.count }
    private var evictionScheduled = false
    /// Evicted entries' files waiting for the pool, oldest first; `removing` is the batch there now.
    var removalQueue: [EvictedEntry] = []
    var removing: [EvictedEntry] = []
    /// Keys whose evicted files are still there: a new entry under one (same names) is served, not kept.
    var doomed: Set<EntryKey> = []
    /// Requests for an entry found without metadata, waiting for its old files to go: the entry
    /// they then make is kept (made while `doomed`, it would not be).
    var afterRemoval: [EntryKey: [() -> Void]] = [:]
    /// Removes one batch of evicted files, on the pool (tests replace it to stop mid-batch, as a crash).
    package var removeEvictedFiles: @Sendable ([String]) -> Void = { paths in
        for path in paths { _ = unlink(path) }
    }
    /// Entries whose metadata the pool is reading (`whenAtHand`), with their waiters; not evictable.
    var loading: [String: [() -> Void]] = [:]
    /// The conversion's place in the index's records (nil: none) and the entries converting now (+Upgrade).
    var upgradeCursor: Int?
    var upgrading: Set<String> = []
    package internal(set) var upgradedEntries = 0
    /// Removes a converted entry's `.meta` file, on the pool (tests replace it to stop mid-batch).
    package var removeConvertedMetadata: @Sendable (String) -> Void = { path in _ = unlink(path) }
    /// Entries waiting for a load task, tasks on the pool, and whether they start at this turn's end.
    var loadQueue: [EntryKey] = []
    var loadsInFlight = 0
    var loadsStartDue = false
    /// Metadata reads on the loop (`existing`'s synchronous first use; requests use `whenAtHand`).
    package internal(set) var readsOnLoop = 0
    var warnedAboutPins = false  // the log already said that pinned bytes alone exceed the limit
    package internal(set) var evictions: UInt64 = 0  // evicted by the size limit since start
    /// Told the store key of each entry the size limit evicts (prefetch counts).
    package var onEvict: ((String) -> Void)?
    /// Data files held open; idle ones are closed past `maxOpenFiles`.
    @exclusivity(unchecked) var openFiles = 0
    package var maxOpenFiles = 512
    private var flushTimer: LoopTimer?
    private(set) var log: IndexLog!
    private var flusher: MetadataFlusher!
    let spare: SpareFolder
    /// Called when an idle resource is let go, so holders of loading state drop theirs.
    package var resourceReleased: ((Resource) -> Void)?
    var resourcesRoot: String { root + "/resources" }
    var tempRoot: String { root + "/tmp" }

    /// Opens (creating if needed) a cache folder, locks it against other processes, loads its index.
    package convenience init(root: String, maxBytes: Int64, loop: EventLoop, logger: Logger,
                             encryptionKey: [UInt8]? = nil) throws(StorageError) {
        let group = try StoreGroup(root: root, encryptionKey: encryptionKey)
        self.init(group: group, shard: 0, maxBytes: maxBytes, loop: loop, logger: logger)
        group.everyShardOpened()
    }

    /// Opens shard `shard` of a folder opened as `group`, with the index the group read for it.
    package init(group: StoreGroup, shard: Int, maxBytes: Int64, loop: EventLoop, logger: Logger) {
        loop.assertInLoop()
        self.root = group.root
        self.group = group
        self.shardIndex = shard
        self.maxBytes = maxBytes
        self.loop = loop
        self.logger = logger
        let taken = group.takeIndex(shard: shard)
        index = taken.index
        spare = SpareFolder(parent: group.root + "/spare", tag: shard)
        log = IndexLog(root: group.root, shard: shard, shards: group.count, generation: taken.generation,
                       changes: taken.journalEntries, keys: group.keys, loop: loop)
        flusher = MetadataFlusher(root: group.root, loop: loop) { [unowned self] in
            flushed($0, snapshot: $1, outcome: $2)
        }
        group.add(index.totalBytes)
        group.addEntries(Int64(index.count))
        for record in index.all where record.key.prefix32 != record.route { noteVariant(record, added: true) }
        group.register(self)
        if taken.rewrite { log.snapshot(snapshotRecords(), blocking: true) }
        if shard == 0, let opening = group.opening {
            logger.info("indexed the cache folder", metadata: [
                "entries": "\(opening.scanned)", "migrated": "\(opening.migrated)", "removed": "\(opening.removed)"])
        }
        logger.debug("loaded the cache index", metadata: [
            "entries": "\(index.count)", "bytes": "\(index.totalBytes)", "folder": "\(root)", "shard": "\(shard)"])
        spare.prepare()
        // Bytes of long downloads reach the disk every few seconds, access times with them.
        flushTimer = LoopTimer(on: loop, after: 5_000, repeat: 5_000) { [unowned self] in
            guard isWritable() else { return }  // also where a failing folder gets its recovery attempt
            for resource in resources.values where resource.needsFlush { flush(resource) }
            log.write()
            log.snapshotIfNeeded(entries: index.count) { snapshotRecords() }
            spare.refillIfNeeded()
            // Shards evict for each other: one whose own growth started no round still gets one.
            if group.count > 1 { evictIfNeeded() }
        }
        evictIfNeeded()
        startUpgrade()
    }

    /// Replaces the spares new resources took (called once a download's bytes reached its readers).
    package func refillSpares() { spare.refillIfNeeded() }

    /// The clock of the cache's time decisions (ms since 1970; `EngineConfiguration.clock`).
    package var clock: @Sendable () -> Int64 = { WallClock.milliseconds() }

    /// The unkeyed store key (SHA-256); `storeKey(for:)` is keyed in an encrypted folder.
    package static func key(for cacheKey: String) -> String { Digest.sha256Hex(cacheKey) }
    package func storeKey(for cacheKey: String) -> String { group.key(for: cacheKey) }

    /// The resource under an already hashed key (hashed once per URL), created empty if unknown.
    package func resource(storeKey key: String, url: @autoclosure () -> String) -> Resource {
        if let existing = existing(storeKey: key) { return existing }
        let url = url()
        // Requests reach the loop owning their URL: one that did not would split the cache.
        assert(group.shard(ofURL: url) == shardIndex, "\(url) belongs to another shard")
        let resource = Resource(key: key, paths: EntryPaths(resourcesRoot: resourcesRoot, key: key),
                                metadata: ResourceMetadata(url: url, lastAccess: clock()), store: self, onDisk: false,
                                route: group.route(ofURL: url), oneFile: group.usesAttributes)
        keep(resource)
        // Its old files are still being removed, or a batch of removals waits: served, not kept.
        if !doomed.isEmpty && (isRemovalBacklogFull || doomed.contains(resource.entryKey)) { resource.makeTransient() }
        return resource
    }

    /// The resource stored under a key: at hand if recently used, else its metadata read now.
    package func existing(storeKey key: String) -> Resource? {
        if let resource = resources[key] { return resource }
        guard index.count > 0, let entryKey = EntryKey(hex: key), let record = index.find(entryKey) else { return nil }
        return materialize(record, key: key)
    }

    /// The entry read from disk now; nil, the entry dropped, without metadata (crash, or removed by hand).
    private func materialize(_ record: EntryIndex.Record, key: String) -> Resource? {
        readsOnLoop += 1
        let paths = EntryPaths(resourcesRoot: resourcesRoot, key: key)
        let stored = paths.readMetadata(keys: group.keys, oneFile: record.isOneFile, version: record.version)
        guard let found = stored, !found.metadata.ranges.isEmpty else {
            if let named = stored?.version, named != record.version { unlink(paths.data(version: named)) }
            forget(record, paths: paths)
            return nil
        }
        return keepStored(key, record, found.metadata, oneFile: found.oneFile)
    }

    /// A stored entry kept at hand: the index keeps the LRU order; the record follows the metadata.
    func keepStored(_ key: String, _ record: EntryIndex.Record, _ stored: ResourceMetadata,
                    oneFile: Bool) -> Resource {
        var metadata = stored
        metadata.lastAccess = record.lastAccess
        let resource = Resource(key: key, paths: EntryPaths(resourcesRoot: resourcesRoot, key: key),
                                metadata: metadata, store: self, onDisk: true, route: record.route,
                                oneFile: oneFile)
        keep(resource)
        recount(resource)
        return resource
    }

    /// Keeps a resource at hand; past the bound lets go of the least recently used idle half (amortised).
    func keep(_ resource: Resource) {
        resources[resource.key] = resource
        guard resources.count > maxIdleResources * 2 else { return }
        let idle = resources.values.filter(isReleasable).sorted { $0.metadata.lastAccess < $1.metadata.lastAccess }
        for resource in idle.prefix(idle.count / 2) { release(resource) }
    }

    /// Idle, nothing pending: only the index needs to know it.
    private func isReleasable(_ resource: Resource) -> Bool {
        !resource.isBusy && resource.onDisk && !resource.isTransient && !resource.needsFlush && !resource.flushing
            && !resource.flushQueued && !resource.flushAgain && !resource.holdsNothing && resource.layout != .converting
    }

    private func release(_ resource: Resource) {
        resources[resource.key] = nil
        resource.closeFile()
        resourceReleased?(resource)
    }

    /// Lets go of a resource that left the store (evicted).
    func letGo(_ resource: Resource) {
        if resources[resource.key] === resource { resources[resource.key] = nil }
        resource.closeFile()
    }

    /// Registers a resource written outside the normal path (import).
    func adopt(_ resource: Resource) {
        if let old = resources[resource.key], old !== resource { delete(old) }
        keep(resource)
        resource.onDisk = true
        entryCreated(resource)
    }

    // MARK: the index

    private func record(of resource: Resource) -> EntryIndex.Record {
        EntryIndex.Record(key: resource.entryKey, bytes: resource.countedBytes, lastAccess: resource.metadata.lastAccess,
                          route: resource.route,
                          flags: EntryIndex.Record.flags(pinned: resource.isPinned, version: resource.version,
                                                         oneFile: resource.layout == .oneFile))
    }

    /// Variants (Vary, content coding) by their URL's route, for invalidating a URL (most have none).
    private var variants: [UInt32: [EntryKey]] = [:]

    private func noteVariant(_ record: EntryIndex.Record, added: Bool) {
        guard record.key.prefix32 != record.route else { return }
        if added {
            variants[record.route, default: []].append(record.key)
        } else {
            variants[record.route]?.removeAll { $0 == record.key }
            if variants[record.route]?.isEmpty == true { variants[record.route] = nil }
        }
    }

    /// Every stored entry of a URL: its primary one and its variants.
    package func entries(ofURL url: String) -> [Resource] {
        let primary = group.primaryKey(ofURL: url)
        var found: [Resource] = []
        if let resource = existing(storeKey: primary) { found.append(resource) }
        guard let route = EntryKey(hex: primary)?.prefix32 else { return found }
        for key in variants[route] ?? [] {
            if let resource = existing(storeKey: key.hex), resource.url == url { found.append(resource) }
        }
        return found.filter { !$0.isTransient }
    }

    /// Variants kept per URL (past it the least recently used idle one goes), so a client varying
    /// a field per request (`Vary: X-Variant`) cannot fill the cache with one URL.
    package var maxVariantsPerURL = 32

    /// A resource's files are about to be created: it enters the index and the journal at once.
    func entryCreated(_ resource: Resource) {
        let record = record(of: resource)
        let isNew = !index.contains(record.key)
        index.put(record)
        group.add(record.bytes)
        log.append(.put, record)
        guard isNew else { return }
        group.addEntries(1)
        noteVariant(record, added: true)
        if let keys = variants[record.route], keys.count > maxVariantsPerURL {
            let oldest = keys.compactMap { index.find($0) }.filter { $0.key != record.key && !isInUse($0) }
                .min { $0.lastAccess < $1.lastAccess }
            if let oldest {
                evict([StoreGroup.Candidate(lastAccess: oldest.lastAccess, key: oldest.key, bytes: oldest.bytes,
                                            shard: shardIndex)], counting: false)
            }
        }
    }

    /// Bytes, version or pin changed: the record follows (the journal once the metadata is written).
    func recount(_ resource: Resource) {
        guard resource.onDisk, let old = index.find(resource.entryKey) else { return }
        let fresh = record(of: resource)
        guard fresh.bytes != old.bytes || fresh.flags != old.flags else { return }
        index.update(resource.entryKey, bytes: fresh.bytes, flags: fresh.flags)
        group.add(fresh.bytes - old.bytes)
        if fresh.flags != old.flags { log.append(.put, fresh) }
        if fresh.bytes > old.bytes && isOverLimit && !evictionScheduled {
            evictionScheduled = true
            loop.executeLater { [weak self] in
                self?.evictionScheduled = false
                self?.evictIfNeeded()
            }
        }
    }

    /// An entry leaves the index (its files already gone or going).
    func removeRecord(_ key: EntryKey) {
        guard let removed = dropRecord(key) else { return }
        log.append(.remove, removed)
    }

    /// An entry leaves the index and counts, not the journal (evicted: that waits for its files).
    func dropRecord(_ key: EntryKey) -> EntryIndex.Record? {
        guard let removed = index.remove(key) else { return nil }
        group.addEntries(-1)
        noteVariant(removed, added: false)
        group.add(-removed.bytes)
        return removed
    }

    /// Drops an entry without usable metadata: record and both layouts' files (a crash may leave either).
    private func forget(_ record: EntryIndex.Record, paths: EntryPaths) {
        unlink(paths.meta)
        unlink(paths.data(version: record.version))
        removeRecord(record.key)
    }

    /// Touches of copied hits (other loops): the LRU order moves without reading the entry.
    package func touch(storeKey key: String) {
        if let resource = resources[key] { return resource.touch() }
        guard let entryKey = EntryKey(hex: key), index.contains(entryKey) else { return }
        touchRecord(entryKey, at: clock())
    }

    /// Makes the entry the most recently used; the journal hears of it once per entry and second (a sealed
    /// record costs ~1.4 µs; a crash loses a second of hit order). Memory and a stop's snapshot stay exact.
    private func touchRecord(_ key: EntryKey, at time: Int64) {
        guard let before = index.touch(key, at: time), before / 1000 != time / 1000 else { return }
        log.append(.touch, EntryIndex.Record(key: key, bytes: 0, lastAccess: time, route: 0, flags: 0))
    }

    /// The index plus evicted entries whose files are still going (no file outlives a crash unknown).
    private func snapshotRecords() -> ContiguousArray<EntryIndex.Record> {
        var inOrder = index.inOrder()
        if isRemovingEvictedFiles { inOrder.insert(contentsOf: recordsBeingRemoved, at: 0) }
        return inOrder
    }

    // MARK: storage faults (full, deleted, read-only, failing)

    /// Until when new downloads pass bytes through (store clock); 0 while storage works.
    private var degradedUntil: Int64 = 0
    /// How long a full disk is assumed full before storing is tried again.
    package var diskFullBackoff: Int64 = 30_000
    /// How long other faults (folder deleted or read-only) last before the folder is recreated.
    package var faultRetryInterval: Int64 = 5_000
    private var faultWarnings = LogThrottle()

    /// A write or open failed for a storage reason: bytes pass through for a while; a full disk
    /// also frees half the idle bytes, oldest first. Warned about at most once a minute.
    package func noteStorageFault(_ error: StorageError) {
        let wasDegraded = degradedUntil > 0
        // A fault while degraded does not push the next recovery attempt back.
        if !isDiskFull { degradedUntil = clock() + (error.isNoSpace ? diskFullBackoff : faultRetryInterval) }
        if let times = faultWarnings.occurred(now: clock()) {
            logger.warning("cache storage failing: passing bytes through without caching", metadata: [
                "folder": "\(root)", "error": "\(error.description)", "times": "\(times)"])
        }
        guard error.isNoSpace, !wasDegraded else { return }
        var candidates: [StoreGroup.Candidate] = []
        var idleBytes: Int64 = 0
        for record in index.oldestFirst() where !isInUse(record) {
            candidates.append(StoreGroup.Candidate(lastAccess: record.lastAccess, key: record.key, bytes: record.bytes + StoreGroup.entryOverhead,
                                                   shard: shardIndex))
            idleBytes += record.bytes
        }
        evict(StoreGroup.victims(candidates, excess: idleBytes / 2), counting: false)
    }

    /// Whether new bytes may be stored now; past a fault's back-off the folder is remade if deleted.
    package func isWritable() -> Bool {
        guard degradedUntil > 0 else { return true }
        guard clock() >= degradedUntil else { return false }
        let folderWasDeleted = !FileIO.isDirectory(resourcesRoot)
        guard FileIO.makeDirectories(resourcesRoot), FileIO.makeDirectory(tempRoot) else {
            degradedUntil = clock() + faultRetryInterval
            return false
        }
        degradedUntil = 0
        group.folders.forget()
        spare.restore()
        if folderWasDeleted {
            // Every stored entry's files went with it: they hold nothing any more.
            for resource in Array(resources.values) where resource.onDisk && FileIO.fileSize(resource.dataPath) == nil {
                if resource.users == 0 { delete(resource) } else { resource.makeTransient() }
            }
            for record in index.all where resources[record.key.hex] == nil { removeRecord(record.key) }
        }
        faultWarnings.reset()
        logger.notice("cache storage writable again: caching resumes", metadata: ["folder": "\(root)"])
        return true
    }

    /// Degraded (passing through) right now; no recovery attempt.
    package var isDiskFull: Bool { degradedUntil > 0 && clock() < degradedUntil }

    // MARK: size accounting and eviction

    /// Over the limit (all shards together).
    var isOverLimit: Bool { group.usedBytes > maxBytes }

    func resourceBecameIdle(_ resource: Resource) {
        // Transient, or no byte stored (a failure, a HEAD of an uncached URL): nothing to keep. A
        // complete empty body is kept (it counts `StoreGroup.entryOverhead` like every entry).
        if resource.isTransient || resource.holdsNothing {
            delete(resource)
            return
        }
        // Hits reuse the open descriptor; only past a cap are idle files closed.
        if openFiles > maxOpenFiles { resource.closeFile() }
        if isOverLimit { evictIfNeeded() }
    }

    /// Before a data file opens: at the cap, idle resources' files close (responses hold their own).
    func makeRoomForFile() {
        guard openFiles >= maxOpenFiles else { return }
        for resource in resources.values where resource.hasOpenFile && !resource.isBusy {
            resource.closeFile()
            if openFiles < maxOpenFiles / 2 { break }
        }
    }

    /// Removes a resource now if idle, else as soon as its last user is done.
    package func remove(_ resource: Resource) {
        if resource.users > 0 { resource.makeTransient() } else { delete(resource) }
    }

    /// Removes a resource at once, even in use (PURGE): its key is free now; readers keep its data file
    /// (renamed, unlinked on the pool), a download into it stops: a short body, never a wrong byte.
    package func purge(_ resource: Resource) {
        guard resource.users > 0 else { return delete(resource) }
        let wasOnDisk = resource.onDisk
        if wasOnDisk { _ = try? resource.dataFile() }  // its readers' descriptor, before the name goes
        resource.makeTransient()
        resource.isRemoved = true
        if resources[resource.key] === resource { resources[resource.key] = nil }
        guard wasOnDisk else { return }
        // A flush in progress writes the metadata again: `flushed` drops it then.
        if !resource.flushing && resource.layout != .oneFile { unlink(resource.paths.meta) }
        moveAsideAndUnlink(resource.paths.data(version: resource.version))
        removeRecord(resource.entryKey)
    }

    func delete(_ resource: Resource) {
        // Purged while in use: only its descriptor is left to close.
        guard !resource.isRemoved else { return resource.closeFile() }
        resource.isRemoved = true
        resource.makeTransient()  // uncounts its bytes
        letGo(resource)
        guard resource.onDisk else { return }
        // A flush in progress would write the metadata again: removed after it.
        if !resource.flushing { removeFiles(of: resource) }
        removeRecord(resource.entryKey)
    }

    /// Unlinking a large file can block for a while: done on the pool.
    func unlinkLater(_ path: String) { loop.offload({ _ = unlink(path) }, done: { _ in }) }

    /// The `.meta` file goes at once (nothing claims the bytes then), the data file too when small.
    func removeFiles(of resource: Resource) {
        if resource.layout != .oneFile { unlink(resource.paths.meta) }
        let data = resource.paths.data(version: resource.version)
        if resource.available.byteCount > 1 << 20 { moveAsideAndUnlink(data) } else { unlink(data) }
    }

    /// Renamed (the key may get new files at once), unlinked on the pool; a crash's leftover goes at start.
    private func moveAsideAndUnlink(_ path: String) {
        let trash = tempRoot + "/removed-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        if rename(path, trash) == 0 { unlinkLater(trash) }
    }

    // MARK: flushing

    /// A hit: only the LRU order changes (a touch, batched into the journal; no metadata write).
    func noteAccess(_ resource: Resource) {
        guard resource.onDisk, !resource.isTransient else { return }
        touchRecord(resource.entryKey, at: resource.metadata.lastAccess)
    }

    /// Queues the resource's metadata for the flusher's batches (written after its data is synced).
    func flush(_ resource: Resource) {
        loop.assertInLoop()
        // While storage fails, metadata waits (still marked) for the recovery.
        guard resource.needsFlush, !resource.isTransient, degradedUntil == 0, resource.onDisk else { return }
        if resource.flushing {
            resource.flushAgain = true
            return
        }
        flusher.enqueue(resource)
    }

    /// A batch wrote (or failed to write) the resource's metadata.
    private func flushed(_ resource: Resource, snapshot: ResourceMetadata, outcome: MetadataWrite.Outcome) {
        resource.flushing = false
        if resource.isRemoved {
            if resource.layout == .converting { conversionFailed(resource) }
            if let successor = resources[resource.key], successor !== resource {
                // The key's new resource owns the files: this flush may have written old ranges
                // over the new bytes. Drop it; the successor writes its own (replacing an attribute).
                if successor.layout == .twoFiles { unlink(resource.paths.meta) }
                successor.needsFlush = true
                flush(successor)
            } else if index.find(resource.entryKey) == nil {
                removeFiles(of: resource)
            }
            // (Else a successor was stored and let go meanwhile: batches run one at a time, so its
            // metadata was written after this.)
            return
        }
        if case .refused(let refusal) = outcome {
            attributeRefused(resource, refusal)
        } else if case .superseded = outcome {
            // Not removed, yet its name leads to another file: replaced by hand. Nothing claims it.
            if resource.layout == .converting { conversionFailed(resource) }
            logger.warning("data file replaced under its entry: metadata not written",
                           metadata: ["file": "\(resource.dataPath)"])
        } else if let failure = outcome.failure {
            if resource.layout == .converting { conversionFailed(resource) }
            if failure.isStorageFault {
                noteStorageFault(failure)  // warned about there, once a minute
            } else {
                logger.warning("cannot write metadata", metadata: ["file": "\(resource.paths.meta)", "error": "\(failure)"])
            }
        } else {
            resource.didFlush(snapshot)
            // The journal records what the metadata now claims.
            if let record = index.find(resource.entryKey) { log.append(.put, record) }
            if resource.layout == .converting { converted(resource, snapshot: snapshot) }
        }
        if resource.flushAgain {
            resource.flushAgain = false
            resource.needsFlush = true
            flush(resource)
        }
        if !resource.isBusy && resources.count > maxIdleResources * 2, let kept = resources[resource.key] {
            keep(kept)  // let go of idle ones now that this one may be released
        }
    }

    /// Flushes every resource and the index now (shutdown may block): the next start reads one snapshot.
    package func flushAllNow() {
        flushTimer?.cancel()
        flushTimer = nil
        var items: [MetadataWrite] = []
        var taken: [Resource] = []
        for resource in resources.values where resource.needsFlush || resource.flushAgain || resource.flushQueued {
            guard !resource.isTransient, !resource.isRemoved, resource.onDisk else { continue }
            // A conversion left for the next start: its `.meta` file stays the entry's metadata.
            if resource.layout == .converting { resource.layout = .twoFiles }
            if resource.flushing {
                resource.flushAgain = true  // its completion flushes again; the loop's stop waits for that
                continue
            }
            items.append(resource.pendingWrite())
            taken.append(resource)
        }
        flusher.dropQueued()
        endUpgrade()  // its conversions stopped above: the rest waits for the next start
        let outcomes = MetadataWrite.performFallingBack(items, root: root,
                                                        tempFolder: tempRoot) { position, refusal in
            // The index says two files before the `.meta` file is written.
            noteRefusal(refusal)
            taken[position].layout = .twoFiles
            recount(taken[position])
        }
        for (position, resource) in taken.enumerated() {
            guard case .written = outcomes[position].outcome else { continue }
            resource.flushQueued = false
            resource.didFlush(items[position].metadata)
            resource.needsFlush = false
            resource.flushAgain = false
            if let record = index.find(resource.entryKey) { log.append(.put, record) }
        }
        log.write()
        guard !log.isSnapshotting else { return }  // the one in progress is as good
        log.snapshot(snapshotRecords(), blocking: true)
        log.close()
    }
}
