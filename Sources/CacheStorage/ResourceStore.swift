import CacheIO
import Glibc
import Logging

/// The cache folder: one sub-folder per resource, keyed by the SHA-256 of
/// its cache key, under a byte limit with least-recently-used eviction.
/// With several loops the folder's resources are split among stores by key
/// hash (`StoreGroup`): each store owns its shard, on its loop.
/// Loop thread only (`init` runs there too: it scans the folder).
package final class ResourceStore {
    package let root: String
    package let loop: EventLoop
    let logger: Logger
    /// What this store shares with the other shards of its folder.
    package let group: StoreGroup
    /// Which shard of the group this store owns.
    package let shardIndex: Int
    package var lock: CacheLock { group.lock }
    /// Bumped when a complete resource changes (see StoreEpoch); readable from any thread.
    package var epoch: StoreEpoch { group.epoch }
    /// The most bytes kept on disk once downloads settle (by all shards together).
    package var maxBytes: Int64
    /// Unflushed bytes after which metadata is written during a download.
    package var flushThreshold: Int64 = 8 << 20
    // Loop-confined, never accessed overlapping: no dynamic exclusivity check (looked up on every request).
    @exclusivity(unchecked) package private(set) var resources: [String: Resource] = [:]
    /// Bytes of this shard's data files that hold cached bytes.
    // Loop-confined, never accessed overlapping: no dynamic exclusivity check (touched on every request).
    @exclusivity(unchecked) package private(set) var totalBytes: Int64 = 0
    /// Resources in the cache.
    package var count: Int { resources.count }
    private var evictionScheduled = false
    /// Whether the log already said that pinned bytes alone exceed the limit.
    var warnedAboutPins = false
    /// Resources evicted by the size limit since start.
    package private(set) var evictions: UInt64 = 0
    /// Data files held open; idle ones are closed past `maxOpenFiles`.
    @exclusivity(unchecked) var openFiles = 0
    package var maxOpenFiles = 512
    private var flushTimer: LoopTimer?
    /// Last-access times of hits, batched (see AccessJournal).
    private var journal: AccessJournal
    /// A ready folder for the next new resource (see SpareFolder).
    let spare: SpareFolder

    private var resourcesRoot: String { root + "/resources" }
    var tempRoot: String { root + "/tmp" }

    /// Opens (creating if needed) a cache folder, locks it against other
    /// processes, and loads every resource's metadata.
    package convenience init(root: String, maxBytes: Int64, loop: EventLoop, logger: Logger) throws(StorageError) {
        let group = try StoreGroup(root: root)
        self.init(group: group, shard: 0, maxBytes: maxBytes, loop: loop, logger: logger)
        group.everyShardOpened()
    }

    /// Opens shard `shard` of a folder already opened as `group`: loads the
    /// metadata of the resources whose key hashes to it.
    package init(group: StoreGroup, shard: Int, maxBytes: Int64, loop: EventLoop, logger: Logger) {
        loop.assertInLoop()
        self.root = group.root
        self.group = group
        self.shardIndex = shard
        self.maxBytes = maxBytes
        self.loop = loop
        self.logger = logger
        let journals = group.openingJournals
        journal = AccessJournal(folder: group.root, shard: shard, of: group.count,
                                lines: journals.lines[AccessJournal.name(shard: shard, of: group.count)] ?? 0)
        spare = SpareFolder(parent: group.root + "/spare", tag: shard)
        load(journals)
        group.register(self)
        spare.prepare()
        // Bytes of long downloads reach the disk every few seconds, access times with them.
        flushTimer = LoopTimer(on: loop, after: 5_000, repeat: 5_000) { [unowned self] in
            guard isWritable() else { return }  // also where a failing folder gets its recovery attempt
            for resource in resources.values where resource.needsFlush { flush(resource) }
            writeJournal()
            spare.refillIfNeeded()
            // Shards evict for each other: one whose own growth started no round still gets one.
            if group.count > 1 { evictIfNeeded() }
        }
        evictIfNeeded()
    }

    /// Replaces the spare folders new resources took (see SpareFolder). The
    /// loader calls it once a download's bytes have gone to its readers.
    package func refillSpares() { spare.refillIfNeeded() }

    /// Milliseconds since 1970 (LRU order).
    package func clock() -> Int64 { WallClock.milliseconds() }

    /// Reads every resource folder; folders without valid metadata are
    /// leftovers of a crash before their first flush and are removed.
    private func load(_ journals: StoreGroup.Journals) {
        var removed = 0
        for name in FileIO.listDirectory(resourcesRoot) {
            let directory = resourcesRoot + "/" + name
            guard name.utf8.count == 64, let bytes = FileIO.readAll(directory + "/meta"),
                  var metadata = ResourceMetadata(decoding: String(decoding: bytes, as: UTF8.self)) else {
                FileIO.removeTree(directory)
                removed += 1
                continue
            }
            // Another shard's (its URL routes elsewhere): left to that shard.
            if group.count > 1 && group.shard(ofURL: metadata.url) != shardIndex { continue }
            // Never claim bytes beyond the data file's end.
            metadata.ranges.clip(to: FileIO.fileSize(directory + "/" + metadata.dataName) ?? 0)
            if metadata.ranges.isEmpty {  // holds no byte (see resourceBecameIdle)
                FileIO.removeTree(directory)
                removed += 1
                continue
            }
            let resource = Resource(key: name, directory: directory, metadata: metadata, store: self, hasFolder: true)
            resources[name] = resource
            totalBytes += resource.available.byteCount
        }
        group.add(totalBytes)
        for (key, resource) in resources {
            if let time = journals.times[key], time > resource.metadata.lastAccess { resource.setLastAccess(time) }
        }
        if journals.otherLayout {
            // Another number of loops wrote these journals, each with keys now
            // of other shards: this shard's times move into its own journal
            // now, and the old files go once every shard has read them.
            journal.rewrite(resources.mapValues { $0.metadata.lastAccess }).perform(tempFolder: tempRoot)
        }
        if removed > 0 { logger.info("removed incomplete cache entries", metadata: ["count": "\(removed)"]) }
        logger.debug("loaded the cache", metadata: ["resources": "\(resources.count)", "bytes": "\(totalBytes)", "folder": "\(root)"])
    }

    package static func key(for cacheKey: String) -> String { Digest.sha256Hex(cacheKey) }

    /// The resource for a cache key (the mapped URL), created empty if unknown.
    package func resource(forKey cacheKey: String, url: String) -> Resource {
        resource(storeKey: Self.key(for: cacheKey), url: url)
    }

    /// The resource under a key already hashed with `key(for:)` (the proxy
    /// hashes each proxy URL's key once, not once per request).
    package func resource(storeKey key: String, url: @autoclosure () -> String) -> Resource {
        if let existing = resources[key] { return existing }
        let url = url()
        // Requests reach the loop owning their URL: one that did not would split the cache.
        assert(group.shard(ofURL: url) == shardIndex, "\(url) belongs to another shard")
        let resource = Resource(key: key, directory: resourcesRoot + "/" + key,
                                metadata: ResourceMetadata(url: url, lastAccess: clock()), store: self, hasFolder: false)
        resources[key] = resource
        return resource
    }

    /// Registers a resource written outside the normal path (import).
    func adopt(_ resource: Resource) {
        if let old = resources[resource.key], old !== resource { delete(old) }
        resources[resource.key] = resource
        accountAdded(resource.available.byteCount)
    }

    // MARK: storage faults (full, deleted, read-only, failing)

    /// Until when new downloads pass bytes through instead of storing them
    /// (store clock); 0 while storage works.
    private var degradedUntil: Int64 = 0
    /// How long a full disk is assumed full before storing is tried again.
    package var diskFullBackoff: Int64 = 30_000
    /// How long other faults (folder deleted or read-only) are assumed to
    /// last before the folder is recreated and storing tried again.
    package var faultRetryInterval: Int64 = 5_000
    private var faultWarnings = LogThrottle()


    /// A write or open failed for a storage reason: serve by passing bytes
    /// through for a while. A full disk also frees what the cache itself can
    /// (idle entries, oldest first). Warned about at most once a minute.
    package func noteStorageFault(_ error: StorageError) {
        let wasDegraded = degradedUntil > 0
        // A fault while degraded does not push the next recovery attempt back.
        if !isDiskFull { degradedUntil = clock() + (error.isNoSpace ? diskFullBackoff : faultRetryInterval) }
        if let times = faultWarnings.occurred(now: clock()) {
            logger.warning("cache storage failing: passing bytes through without caching", metadata: [
                "folder": "\(root)", "error": "\(error.description)", "times": "\(times)"])
        }
        guard error.isNoSpace, !wasDegraded else { return }
        let idle = resources.values.filter { !$0.isBusy && !$0.isPinned }
            .sorted { ($0.metadata.lastAccess, $0.key) < ($1.metadata.lastAccess, $1.key) }
        // Half of what is idle, oldest first: room for the next attempt.
        let target = idle.reduce(0) { $0 + $1.available.byteCount } / 2
        var freed: Int64 = 0
        for resource in idle where freed < target {
            freed += resource.available.byteCount
            delete(resource)
        }
    }

    /// Whether new bytes may be stored now. Once a fault's back-off is over,
    /// the folder is recreated if it was deleted and storing is tried again.
    package func isWritable() -> Bool {
        guard degradedUntil > 0 else { return true }
        guard clock() >= degradedUntil else { return false }
        guard FileIO.makeDirectories(resourcesRoot), FileIO.makeDirectory(tempRoot) else {
            degradedUntil = clock() + faultRetryInterval
            return false
        }
        degradedUntil = 0
        spare.restore()
        // Entries whose folder went away hold nothing any more.
        for resource in resources.values where resource.hasFolder && !FileIO.isDirectory(resource.directory) {
            if resource.users == 0 { delete(resource, removingFolder: false) } else { resource.makeTransient() }
        }
        faultWarnings.reset()
        logger.notice("cache storage writable again: caching resumes", metadata: ["folder": "\(root)"])
        return true
    }

    /// Degraded (passing through) right now; no recovery attempt.
    package var isDiskFull: Bool { degradedUntil > 0 && clock() < degradedUntil }

    // MARK: size accounting and eviction

    func accountAdded(_ bytes: Int64) {
        totalBytes += bytes
        group.add(bytes)
        if isOverLimit && !evictionScheduled {
            evictionScheduled = true
            loop.executeLater { [weak self] in
                guard let self else { return }
                self.evictionScheduled = false
                self.evictIfNeeded()
            }
        }
    }

    func accountRemoved(_ bytes: Int64) {
        totalBytes -= bytes
        group.add(-bytes)
    }

    /// Whether the folder holds more than the limit (all shards together).
    private var isOverLimit: Bool { group.totalBytes > maxBytes }

    func resourceBecameIdle(_ resource: Resource) {
        // Transient, or no byte stored (a failure, a HEAD of an uncached URL,
        // an empty resource): nothing worth a folder. Zero-byte entries would
        // cost nothing against the size limit and so never be evicted.
        if resource.isTransient || resource.available.isEmpty {
            delete(resource)
            return
        }
        // Hits reuse the open descriptor; only past a cap are idle files closed.
        if openFiles > maxOpenFiles { resource.closeFile() }
        if isOverLimit { evictIfNeeded() }
    }

    /// Deletes least recently used resources nobody is using until the total
    /// fits the limit. Resources in use wait until they are idle.
    /// With several shards, the least recently used over all of them go
    /// (see StoreGroup), each deleted by its own shard.
    package func evictIfNeeded() {
        guard isOverLimit else { return }
        guard group.count == 1 else { return group.evictionNeeded(maxBytes: maxBytes) }
        // One shard: the round, here and now.
        let offer = evictionOffer()
        notePinned(offer.pinned)
        evict(StoreGroup.victims(offer.candidates, excess: totalBytes - maxBytes))
    }

    /// This shard's part of an eviction round: what it could delete now,
    /// and its pinned bytes (which the round adds up for the warning).
    func evictionOffer() -> (candidates: [StoreGroup.Candidate], pinned: Int64) {
        let candidates = resources.values.filter { !$0.isBusy && !$0.isPinned && !$0.isTransient }.map {
            StoreGroup.Candidate(lastAccess: $0.metadata.lastAccess, key: $0.key, bytes: $0.available.byteCount,
                                 shard: shardIndex)
        }
        return (candidates, pinnedBytes)
    }

    /// Deletes the resources a round chose, those still idle.
    func evict(_ victims: [StoreGroup.Candidate]) {
        for victim in victims {
            guard let resource = resources[victim.key], !resource.isBusy, !resource.isPinned else { continue }
            logger.info("evict", metadata: ["url": "\(resource.url)", "bytes": "\(resource.available.byteCount)"])
            evictions += 1
            delete(resource)
        }
    }

    /// Removes a resource now if idle, else as soon as its last user is done.
    package func remove(_ resource: Resource) {
        if resource.users > 0 {
            resource.makeTransient()
        } else {
            delete(resource)
        }
    }

    func delete(_ resource: Resource, removingFolder: Bool = true) {
        guard !resource.isRemoved else { return }
        resource.isRemoved = true
        resource.makeTransient()  // uncounts its bytes
        if resources[resource.key] === resource { resources[resource.key] = nil }
        resource.closeFile()
        // A flush in progress would recreate the folder: delete after it.
        if removingFolder && !resource.flushing { removeFolder(resource.directory) }
    }

    /// Unlinking a large file can block for a while: done on the pool.
    func unlinkLater(_ path: String) {
        loop.offload({ _ = unlink(path) }, done: { _ in })
    }

    /// Moves the folder out of the way at once (one rename), then removes it
    /// on the pool: the same key may get a new folder right away (an import
    /// after a clear, a download after a removal) without the removal racing it.
    /// What a crash leaves in tmp/ is removed at the next start.
    private func removeFolder(_ directory: String) {
        let trash = tempRoot + "/removed-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let doomed = rename(directory, trash) == 0 ? trash : directory
        loop.offload({ FileIO.removeTree(doomed) }, done: { _ in })
    }

    // MARK: flushing

    /// A hit: the resource was just used. Only the LRU order changes, so this
    /// is batched into the access journal rather than a durable metadata write.
    func noteAccess(_ resource: Resource) {
        journal.note(resource.key, at: resource.metadata.lastAccess)
    }

    private func writeJournal(blocking: Bool = false) {
        let resources = self.resources
        guard let write = journal.takeWrite(current: { resources.mapValues { $0.metadata.lastAccess } }) else { return }
        let temp = tempRoot
        if blocking { write.perform(tempFolder: temp) } else { loop.offload({ write.perform(tempFolder: temp) }, done: { _ in }) }
    }

    /// Syncs the data file, then atomically replaces the metadata, off the loop.
    /// One flush per resource at a time; requests during one coalesce into one more.
    func flush(_ resource: Resource) {
        loop.assertInLoop()
        // While storage fails, metadata waits (still marked) for the recovery.
        guard resource.needsFlush, !resource.isTransient, degradedUntil == 0 else { return }
        if resource.flushing {
            resource.flushAgain = true
            return
        }
        resource.flushing = true
        resource.needsFlush = false
        resource.unflushedBytes = 0
        let snapshot = resource.pendingMetadata()
        let file = resource.openFile
        let directory = resource.directory
        let temp = tempRoot
        loop.offload({ () -> StorageError? in
            Self.persist(snapshot, file: file, directory: directory, tempFolder: temp)
        }, done: { [logger] failure in
            resource.flushing = false
            if resource.isRemoved {
                guard let successor = self.resources[resource.key] else {
                    self.removeFolder(directory)
                    return
                }
                // The key has a new resource, which owns the folder now: this
                // flush may have written the old metadata there, claiming old
                // ranges over the new bytes. Drop it; the new one writes its own.
                unlink(directory + "/meta")
                successor.needsFlush = true
                self.flush(successor)
                return
            }
            if let failure {
                if failure.isStorageFault {
                    self.noteStorageFault(failure)  // warned about there, once a minute
                } else {
                    logger.warning("cannot write metadata", metadata: ["folder": "\(directory)", "error": "\(failure)"])
                }
            } else {
                resource.didFlush(snapshot)
            }
            if resource.flushAgain {
                resource.flushAgain = false
                resource.needsFlush = true
                self.flush(resource)
            }
        })
    }

    /// Blocking: data first, then the metadata that claims it. Nil when
    /// done, else why not (errno is read here, on the thread that failed).
    private static func persist(_ metadata: ResourceMetadata, file: DataFile?, directory: String,
                                tempFolder: String) -> StorageError? {
        func failure(_ what: String) -> StorageError {
            let code = errno
            return StorageError("\(what): \(FileIO.errorText(code))", code: code)
        }
        if let file, !file.sync() { return failure("sync") }
        guard FileIO.makeDirectory(directory) else { return failure("create folder") }
        guard FileIO.writeAtomically(directory + "/meta", Array(metadata.encoded().utf8), tempFolder: tempFolder) else {
            return failure("write")
        }
        return nil
    }

    /// Flushes every resource synchronously (shutdown; blocking is acceptable there).
    package func flushAllNow() {
        flushTimer?.cancel()
        flushTimer = nil
        writeJournal(blocking: true)
        for resource in resources.values where resource.needsFlush || resource.flushAgain {
            guard !resource.isTransient else { continue }
            if resource.flushing {
                // Its completion flushes again; the loop's stop waits for that.
                resource.flushAgain = true
                continue
            }
            let snapshot = resource.pendingMetadata()
            if Self.persist(snapshot, file: resource.openFile, directory: resource.directory, tempFolder: tempRoot) == nil {
                resource.didFlush(snapshot)
                resource.needsFlush = false
                resource.flushAgain = false
            }
        }
    }
}
