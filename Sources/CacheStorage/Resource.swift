import Glibc

/// One cached resource: its metadata, its sparse data file and the bytes
/// written so far. Loop thread only.
///
/// `available` is what has been written to the data file (served at once);
/// `metadata.ranges` is the subset made durable, the only one persisted, so a
/// crash can lose recent bytes but never claim bytes that are not on disk.
package final class Resource {
    package let key: String
    package let directory: String
    package private(set) var metadata: ResourceMetadata
    package private(set) var available: RangeSet
    /// Readers and downloads using the resource; in use means not evictable.
    package var users = 0

    private var file: DataFile?
    private unowned let store: ResourceStore
    var unflushedBytes: Int64 = 0
    var flushing = false
    var flushAgain = false
    var needsFlush = false

    init(key: String, directory: String, metadata: ResourceMetadata, store: ResourceStore) {
        self.key = key
        self.directory = directory
        self.metadata = metadata
        self.available = metadata.ranges
        self.store = store
    }

    package var url: String { metadata.url }
    package var totalLength: Int64? { metadata.totalLength }
    package var dataPath: String { directory + "/data" }
    package var metadataPath: String { directory + "/meta" }

    /// The data file, opened (and its folder created) on first use.
    package func dataFile() throws(StorageError) -> DataFile {
        if let file { return file }
        if let adopted = store.spare.adopt(as: directory) {
            file = adopted
            return adopted
        }
        guard FileIO.makeDirectory(directory) else {
            throw StorageError("create \(directory): \(FileIO.errorText())")
        }
        let opened = try DataFile(path: dataPath)
        file = opened
        return opened
    }

    /// Records what the origin said about the resource.
    package func setInfo(totalLength: Int64?, contentType: String?, etag: String?, lastModified: String?) {
        metadata.totalLength = totalLength
        metadata.contentType = contentType
        metadata.etag = etag
        metadata.lastModified = lastModified
        if let totalLength { available.clip(to: totalLength) }
        needsFlush = true
    }

    /// Stores bytes received from the origin at their offset.
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StorageError) {
        guard bytes.count > 0 else { return }
        try dataFile().write(bytes, at: offset)
        available.insert(offset..<(offset + Int64(bytes.count)))
        unflushedBytes += Int64(bytes.count)
        needsFlush = true
        if unflushedBytes >= store.flushThreshold { store.flush(self) }
    }

    /// Marks the resource as just used (LRU order).
    package func touch() {
        let now = Int64(time(nil))
        if metadata.lastAccess != now {
            metadata.lastAccess = now
            needsFlush = true
        }
    }

    /// Persists metadata soon (after the data it claims is synced).
    package func flush() { store.flush(self) }

    /// Snapshot of what a flush should claim.
    func pendingMetadata() -> ResourceMetadata {
        var snapshot = metadata
        snapshot.ranges = available
        return snapshot
    }

    func didFlush(_ snapshot: ResourceMetadata) {
        metadata.ranges = snapshot.ranges
    }

    var openFile: DataFile? { file }
}
