import Glibc

// Older-layout entries (a `.meta` file beside the data) are converted to one file in the background:
// batches of idle entries, no file-system work on the loop. A conversion is a metadata flush into the
// attribute (made durable), the `.meta` file removed on the pool, then the index told "one file".
//
// A crash at any step leaves a consistent entry: before the attribute is durable, the index says two
// files and the `.meta` file is read; once the `.meta` file is gone but not journaled, the index says
// two files, finds none and reads the attribute. The index never says one file while a `.meta` file
// exists, so no file outlives its entry unknown.
extension ResourceStore {
    /// Entries one conversion batch takes (one flusher batch: two syncs of the file system).
    package static let upgradeBatch = 128

    /// Whether entries are still being converted (tests wait on it).
    package var isUpgrading: Bool { upgradeCursor != nil || !upgrading.isEmpty }

    /// Pinned entries stay as they are: their preload or download may write them.
    private static func needsConversion(_ record: EntryIndex.Record) -> Bool { !record.isOneFile && !record.isPinned }

    /// At open: a pass over the index converts its entries of the older layout.
    func startUpgrade() {
        guard group.usesAttributes else { return }
        let count = index.all.lazy.filter(Self.needsConversion).count
        guard count > 0 else { return }
        logger.info("converting cache entries to one file each", metadata: [
            "entries": "\(count)", "folder": "\(root)", "shard": "\(shardIndex)"])
        upgradeCursor = 0
        loop.executeLater { [weak self] in self?.upgradeNextBatch() }
    }

    /// The next batch once the last ended (one pass: an entry a removal moved behind the cursor
    /// waits for the next start); entries in use, loading or pinned are skipped.
    func upgradeNextBatch() {
        guard upgrading.isEmpty, var cursor = upgradeCursor else { return }
        guard group.usesAttributes, !isDiskFull else {
            upgradeCursor = nil
            return
        }
        let batch = nextUpgradeBatch(from: &cursor)
        upgradeCursor = cursor < index.count ? cursor : nil
        upgrading = Set(batch)
        for key in batch {
            if resources[key] != nil {
                convert(key)
            } else {
                whenAtHand(storeKey: key) { [weak self] in self?.convert(key) }
            }
        }
        if batch.isEmpty { batchEnded() }  // a batch's last conversion to end calls it otherwise, once
    }

    /// Its own function: the records' buffer is let go before the batch changes the index (else copied).
    private func nextUpgradeBatch(from cursor: inout Int) -> [String] {
        var batch: [String] = []
        let records = index.all
        while batch.count < Self.upgradeBatch && cursor < records.count {
            let record = records[cursor]
            cursor += 1
            guard Self.needsConversion(record) else { continue }
            let hex = record.key.hex
            if loading[hex] != nil { continue }
            if let resource = resources[hex], resource.isBusy { continue }
            batch.append(hex)
        }
        return batch
    }

    /// The pass ends here (all being written, or stopping): taken entries keep their `.meta` file.
    func endUpgrade() {
        upgradeCursor = nil
        upgrading.removeAll()
    }

    /// An entry at hand (or found gone): its metadata is flushed into the attribute.
    private func convert(_ key: String) {
        guard upgrading.contains(key) else { return }  // the pass ended meanwhile (`endUpgrade`)
        guard let resource = resources[key], resource.layout == .twoFiles, resource.onDisk, !resource.isBusy,
              !resource.isTransient, !resource.isRemoved, !resource.isPinned, !resource.flushing,
              !resource.flushQueued, !isDiskFull else {
            return conversionEnded(key)
        }
        resource.layout = .converting
        resource.needsFlush = true
        flush(resource)
        // Not queued (storage failing): it stays two files, its metadata flushed there by the timer.
        if !resource.flushQueued && !resource.flushing { conversionFailed(resource) }
    }

    /// A converting entry's attribute is durable: its `.meta` file goes (pool), then the index says one file.
    func converted(_ resource: Resource, snapshot: ResourceMetadata) {
        // A new version meanwhile: the attribute went on the old file; the new one is written as two files.
        guard snapshot.dataName == resource.metadata.dataName, !resource.isRemoved else {
            resource.layout = .twoFiles
            return conversionEnded(resource.key)
        }
        let (meta, remove) = (resource.paths.meta, removeConvertedMetadata)
        loop.offload({ remove(meta) }, done: { [weak self] in
            guard let self else { return }
            if resource.layout == .converting {
                resource.layout = resource.isRemoved ? .twoFiles : .oneFile
                if resource.layout == .oneFile {
                    recount(resource)  // the journal says one file
                    upgradedEntries += 1
                }
            }
            conversionEnded(resource.key)
        })
    }

    /// A converting entry's flush failed: it stays two files (its `.meta` file untouched).
    func conversionFailed(_ resource: Resource) {
        if resource.layout == .converting { resource.layout = .twoFiles }
        conversionEnded(resource.key)
    }

    private func conversionEnded(_ key: String) {
        guard upgrading.remove(key) != nil, upgrading.isEmpty else { return }
        batchEnded()
    }

    /// The next batch on a later turn of the loop, or the pass is over.
    private func batchEnded() {
        guard upgradeCursor == nil else { return loop.executeLater { [weak self] in self?.upgradeNextBatch() } }
        logger.info("cache entries converted to one file each", metadata: [
            "entries": "\(upgradedEntries)", "folder": "\(root)", "shard": "\(shardIndex)"])
    }

    /// The file system refused a flush's attribute: the entry keeps (or returns to) a `.meta` file.
    func attributeRefused(_ resource: Resource, _ refusal: MetadataAttribute.Refusal) {
        noteRefusal(refusal)
        switch resource.layout {
        case .converting:
            conversionFailed(resource)
        case .oneFile:
            resource.layout = .twoFiles
            recount(resource)
        case .twoFiles:
            break
        }
        resource.flushAgain = true  // into the `.meta` file
    }

    /// Remembers a file system without user attributes for the whole folder (logged once).
    func noteRefusal(_ refusal: MetadataAttribute.Refusal) {
        guard refusal == .unsupported, group.refuseAttributes() else { return }
        upgradeCursor = nil
        logger.notice("the file system takes no user attributes: cache entries keep a .meta file each",
                      metadata: ["folder": "\(root)"])
    }
}
