import CacheIO
import Glibc

/// One shard's index on disk. Puts and removals reach the journal at once, before their files exist or after
/// they are gone (a kill leaves no file unknown); touches are batched (a crash loses recent access times). A
/// snapshot, off the loop, once the journals hold more changes than there are entries (replaying never costs
/// more). Loop thread only; a write is one `write(2)`.
final class IndexLog {
    let root: String
    let shard: Int
    private let shards: Int
    private let keys: FolderKeys?
    private let loop: EventLoop?  // runs snapshots on its pool; nil: every snapshot blocks (tests)
    private(set) var generation: Int
    private var changes: Int  // changes a snapshot would fold in (replayed at start and appended since)
    private(set) var isSnapshotting = false
    private var fd: Int32 = -1
    private var pending: [UInt8] = []

    init(root: String, shard: Int, shards: Int = 1, generation: Int, changes: Int = 0,
         keys: FolderKeys? = nil, loop: EventLoop? = nil) {
        self.root = root
        self.shard = shard
        self.shards = shards
        self.generation = generation
        self.changes = changes
        self.keys = keys
        self.loop = loop
        pending.reserveCapacity(8192)
    }

    var path: String { root + "/" + IndexFiles.journalName(shard: shard, generation: generation) }

    func append(_ op: IndexFiles.Op, _ record: EntryIndex.Record) {
        IndexFiles.encodeEntry(op, record, into: &pending, keys: keys)
        changes += 1
        if op != .touch || pending.count >= 64 << 10 { write() }
    }

    /// Several changes in one write (an eviction batch's removals).
    func appendAll(_ op: IndexFiles.Op, _ records: [EntryIndex.Record]) {
        guard !records.isEmpty else { return }
        for record in records { IndexFiles.encodeEntry(op, record, into: &pending, keys: keys) }
        changes += records.count
        write()
    }

    /// Writes what is pending (touches wait here for the next change or timer).
    func write() {
        guard !pending.isEmpty else { return }
        if fd < 0 { fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        // A failing folder drops the changes: the store notices on its own writes, and the next
        // start rebuilds what the journal misses.
        if fd >= 0 { _ = FileIO.writeFully(fd, pending) }
        pending.removeAll(keepingCapacity: true)
    }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// A snapshot once the changes outnumber the entries (and 65,536).
    func snapshotIfNeeded(entries: Int, records: () -> ContiguousArray<EntryIndex.Record>) {
        guard !isSnapshotting, changes > max(65_536, entries) else { return }
        snapshot(records(), blocking: false)
    }

    /// A snapshot: appends switch to the next journal first, older journals go once it is in place.
    /// `blocking`: here and now (opening, shutdown), else on the pool.
    func snapshot(_ records: ContiguousArray<EntryIndex.Record>, blocking: Bool) {
        write()
        close()
        generation += 1
        changes = 0
        let (root, shard, shards, generation, keys) = (root, shard, shards, generation, keys)
        let work: @Sendable () -> Void = {
            let bytes = IndexFiles.encodeSnapshot(records, shard: shard, shards: shards, generation: generation, keys: keys)
            let path = root + "/" + IndexFiles.snapshotName(shard: shard)
            guard FileIO.writeAtomically(path, bytes, tempFolder: root + "/tmp") else { return }
            for journal in IndexFiles.list(in: root).journals[shard] ?? [] where journal.generation < generation {
                unlink(journal.path)
            }
        }
        guard !blocking, let loop else { return work() }
        isSnapshotting = true
        loop.offload(work, done: { [weak self] _ in self?.isSnapshotting = false })
    }
}
