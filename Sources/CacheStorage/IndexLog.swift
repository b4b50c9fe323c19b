import CacheIO
import Glibc

/// One shard's index on disk: changes appended to the journal (written with the store's timer
/// and at shutdown), and a snapshot, off the loop, once the journals hold more changes than there
/// are entries (so replaying them never costs more than the snapshot). Loop thread only.
final class IndexLog {
    private var journal: IndexJournal
    /// Changes a snapshot would fold in (replayed at start and appended since).
    private var changes: Int
    private(set) var isSnapshotting = false
    private let root: String
    private let tempRoot: String
    private let shard: Int
    private let shards: Int
    private let keys: FolderKeys?
    private let loop: EventLoop

    init(root: String, tempRoot: String, shard: Int, shards: Int, generation: Int, changes: Int, keys: FolderKeys?,
         loop: EventLoop) {
        journal = IndexJournal(root: root, shard: shard, generation: generation, keys: keys)
        self.changes = changes
        self.root = root
        self.tempRoot = tempRoot
        self.shard = shard
        self.shards = shards
        self.keys = keys
        self.loop = loop
    }

    func append(_ op: IndexFiles.Op, _ record: EntryIndex.Record) {
        journal.append(op, record)
        changes += 1
    }

    func appendAll(_ op: IndexFiles.Op, _ records: [EntryIndex.Record]) {
        journal.appendAll(op, records)
        changes += records.count
    }

    func write() { journal.write() }

    func close() { journal.close() }

    /// A snapshot once the changes outnumber the entries (and 65,536).
    func snapshotIfNeeded(entries: Int, records: () -> ContiguousArray<EntryIndex.Record>) {
        guard !isSnapshotting, changes > max(65_536, entries) else { return }
        snapshot(records(), blocking: false)
    }

    /// A snapshot: appends switch to the next journal first, older journals go once it is in place.
    /// `blocking`: here and now (opening, shutdown), else on the pool.
    func snapshot(_ records: ContiguousArray<EntryIndex.Record>, blocking: Bool) {
        journal.rotate()
        changes = 0
        let generation = journal.generation
        let (root, shard, shards, temp, keys) = (self.root, self.shard, self.shards, tempRoot, self.keys)
        let work: @Sendable () -> Void = {
            let bytes = IndexFiles.encodeSnapshot(records, shard: shard, shards: shards, generation: generation, keys: keys)
            guard FileIO.writeAtomically(root + "/" + IndexFiles.snapshotName(shard: shard), bytes, tempFolder: temp) else {
                return
            }
            for journal in IndexFiles.list(in: root).journals[shard] ?? [] where journal.generation < generation {
                unlink(journal.path)
            }
        }
        if blocking { return work() }
        isSnapshotting = true
        loop.offload(work, done: { [weak self] _ in self?.isSnapshotting = false })
    }
}
