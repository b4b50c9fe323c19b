import Glibc

/// An evicted entry whose files wait to be removed on the pool.
struct EvictedEntry {
    let record: EntryIndex.Record
    let files: [String]  // the metadata file first: once it is gone, nothing claims the data
}

// Eviction runs in batches. A round takes the least recently used idle entries out of the index on the
// loop (the counts fall under the limit at once); their files go in one pool task, then the journal hears
// of it, so a crash mid-batch leaves listed entries without files, forgotten at first use. Rounds start
// past the limit and go a slack under it: one per slack of new bytes, no miss waits for a file, and with
// one batch on the pool at a time the folder is over its limit by at most one batch's files.
extension ResourceStore {
    /// Most entries a round evicts: one task on the pool, an unlink each (two in the older layout).
    package static let evictionBatch = 256

    /// How far under the limit a round goes (a 64th, at most 16 MiB): room for the next misses.
    package var evictionSlack: Int64 { min(maxBytes / 64, 16 << 20) }
    /// Where a round aims (it starts past the limit: a full cache holds what it may).
    var lowWater: Int64 { maxBytes - evictionSlack }
    /// Whether eviction's files are still being removed (tests wait on it).
    package var isRemovingEvictedFiles: Bool { !removing.isEmpty || !removalQueue.isEmpty }
    var pendingRemovals: Int { removing.count + removalQueue.count }
    /// A batch of files waits for the pool (unlinks slower than misses: a disk busy syncing): new
    /// entries are served, not kept, until it drains, so the folder stays within a batch of its limit.
    var isRemovalBacklogFull: Bool { pendingRemovals >= Self.evictionBatch }

    /// In use (read, downloaded into, leased, loading, or not kept): not evictable now.
    func isInUse(_ record: EntryIndex.Record) -> Bool {
        guard !resources.isEmpty || !loading.isEmpty else { return false }
        let key = record.key.hex
        if !loading.isEmpty && loading[key] != nil { return true }
        guard let resource = resources[key] else { return false }
        return resource.isBusy || resource.isTransient
    }

    /// Over the limit: the least recently used idle entries (at most `evictionBatch`) leave the
    /// index down to a slack under it; with several shards the oldest of all (StoreGroup).
    package func evictIfNeeded() {
        guard isOverLimit else { return }
        guard group.count == 1 else { return group.evictionNeeded(maxBytes: maxBytes, lowWater: lowWater) }
        let excess = group.usedBytes - lowWater
        let offer = evictionOffer(excess: excess)
        notePinned(offer.pinned)
        evict(StoreGroup.victims(offer.candidates, excess: excess))
    }

    /// This shard's oldest idle entries (LRU walk, no sort) covering `excess` or a batch; its pinned bytes.
    func evictionOffer(excess: Int64) -> (candidates: [StoreGroup.Candidate], pinned: Int64) {
        var candidates: [StoreGroup.Candidate] = []
        var left = excess
        // With the removals pending, at most one batch waits for the pool.
        let room = Self.evictionBatch - pendingRemovals
        for record in index.oldestFirst() where !isInUse(record) {
            if left <= 0 || candidates.count >= room { break }
            candidates.append(StoreGroup.Candidate(lastAccess: record.lastAccess, key: record.key,
                                                   bytes: record.bytes + StoreGroup.entryOverhead, shard: shardIndex))
            left -= record.bytes + StoreGroup.entryOverhead
        }
        return (candidates, index.pinnedBytes)
    }

    /// Evicts a round's choice, those still idle: out of the index now, files queued for the pool.
    func evict(_ victims: [StoreGroup.Candidate], counting: Bool = true) {
        for victim in victims {
            guard let record = index.find(victim.key), !record.isPinned else { continue }
            let key = victim.key.hex
            if !loading.isEmpty && loading[key] != nil { continue }
            if let resource = resources[key] {
                guard !resource.isBusy else { continue }
                logger.debug("evict", metadata: ["url": "\(resource.url)", "bytes": "\(record.bytes)"])
                if resource.flushing {
                    // Its flush would write the metadata again: its end removes the files (see `flushed`).
                    delete(resource)
                    if counting { counted(key) }
                    continue
                }
                resource.isRemoved = true
                resource.makeTransient()
                letGo(resource)
            } else {
                logger.trace("evict", metadata: ["key": "\(key)", "bytes": "\(record.bytes)"])
            }
            guard let dropped = dropRecord(victim.key) else { continue }
            let paths = EntryPaths(resourcesRoot: resourcesRoot, key: key)
            removalQueue.append(EvictedEntry(record: dropped, files: dropped.files(paths)))
            doomed.insert(dropped.key)
            if counting { counted(key) }
        }
        removeNextBatch()
    }

    /// An entry the size limit evicted: counted, and told to whoever listens (prefetch counts).
    private func counted(_ key: String) {
        evictions += 1
        onEvict?(key)
    }

    /// Queues an entry already out of the index for its files' removal.
    func queueRemoval(_ entry: EvictedEntry) {
        removalQueue.append(entry)
        doomed.insert(entry.record.key)
        removeNextBatch()
    }

    /// The next batch of evicted files to the pool (one at a time), in two parallel tasks (one fell
    /// behind 2,000 new entries a second); the journal hears when both are done.
    private func removeNextBatch() {
        guard removing.isEmpty, !removalQueue.isEmpty else { return }
        let batch = Array(removalQueue.prefix(Self.evictionBatch))
        removalQueue.removeFirst(batch.count)
        removing = batch
        let remove = removeEvictedFiles
        let halves = batch.count > 1 ? [batch[..<(batch.count / 2)], batch[(batch.count / 2)...]] : [batch[...]]
        var left = halves.count
        for half in halves {
            let paths = half.flatMap(\.files)
            loop.offload({ remove(paths) }, done: { [weak self] in
                left -= 1
                if left == 0 { self?.batchRemoved() }
            })
        }
    }

    /// A batch's files are gone: journaled, keys free again, the next batch or round follows.
    private func batchRemoved() {
        let batch = removing
        removing = []
        log.appendAll(.remove, batch.map(\.record))  // in one journal write
        for entry in batch { doomed.remove(entry.record.key) }
        let waiting = afterRemoval.isEmpty ? [] : batch.flatMap { afterRemoval.removeValue(forKey: $0.record.key) ?? [] }
        if removalQueue.isEmpty { evictIfNeeded() } else { removeNextBatch() }
        for body in waiting { body() }
    }

    /// Evicted records whose files may still exist (a snapshot keeps them: no file unknown after a crash).
    var recordsBeingRemoved: [EntryIndex.Record] { (removing + removalQueue).map(\.record) }
}
