import CacheIO
import Glibc
import Synchronization

/// What the shards (by key hash, one a loop) of a cache folder share: lock, epoch of complete resources, the
/// byte count the limit applies to, an LRU order over all. A hit touches its shard only; the count is atomic;
/// eviction takes the oldest idle entries of all shards, each deleting its own. Thread-safe.
package final class StoreGroup: Sendable {
    package let count: Int  // shards of the folder (1: one store owns everything)
    package let root: String
    package let lock: CacheLock
    package let epoch = StoreEpoch()  // bumped when any shard's complete resource changes
    private let bytes = Atomic<Int64>(0)
    private let entries = Atomic<Int64>(0)
    private let evicting = Atomic<Bool>(false)
    /// The store key a URL's requests are routed by (its variants stay in that shard).
    private let routingKey: @Sendable (String) -> String
    /// Every shard's index, read once before any opens; each shard takes its own.
    private let loaded: Locked<IndexLoader.Loaded?>
    private let stores = Locked<[Shard]>([])

    private struct Shard: @unchecked Sendable {
        let store: ResourceStore  // touched only inside `loop.execute`, on its loop
        let loop: EventLoop
        let index: Int
    }

    package let keys: FolderKeys?
    package let folders = LevelFolders()  // the entry folders made so far (made with their first entry)
    /// The file system refused user attributes (ENOTSUP): new entries keep a `.meta` file, none converts.
    private let attributesRefused = Atomic<Bool>(false)

    /// Entries keep their metadata in their data file's attribute (MetadataAttribute).
    package var usesAttributes: Bool { !attributesRefused.load(ordering: .relaxed) }

    /// The file system refused an attribute; true the first time (logged then).
    func refuseAttributes() -> Bool { !attributesRefused.exchange(true, ordering: .relaxed) }

    /// Creates (if needed) and locks the folder, clearing scratch folders; throws, touching nothing, while
    /// another process holds it or `encryptionKey` does not fit. `cacheKey` maps URLs to cache keys.
    package init(root: String, count: Int = 1, encryptionKey: [UInt8]? = nil,
                 cacheKey: @escaping @Sendable (String) -> String = { $0 }) throws(StorageError) {
        self.root = root
        self.count = max(1, count)
        guard FileIO.makeDirectories(root) else {
            throw StorageError("cannot create cache folder \(root): \(FileIO.errorText())")
        }
        // Another user's folder, or one others may write to, is not ours to trust.
        if let problem = FileIO.untrustedFolderProblem(root, inside: ["resources", "tmp", "spare"]) {
            throw StorageError(problem, code: EPERM)
        }
        // New: no index and no entry yet (an encrypted folder is sealed from its first byte).
        let isNew = IndexFiles.list(in: root).snapshots.isEmpty && IndexFiles.list(in: root).journals.isEmpty
            && FileIO.listDirectory(root + "/resources").allSatisfy { FileIO.listDirectory(root + "/resources/" + $0).isEmpty }
        guard FileIO.makeDirectory(root + "/resources") else {
            throw StorageError("cannot create cache folder \(root): \(FileIO.errorText())")
        }
        // An older version's folder (0755) is narrowed: its metadata names URLs with their tokens.
        FileIO.restrict(root, to: 0o700)
        lock = try CacheLock(folder: root)
        let keys = try FolderKeys.open(root: root, userKey: encryptionKey, isNew: isNew)
        self.keys = keys
        routingKey = { url in keys.map { $0.storeKey(for: cacheKey(url)) } ?? ResourceStore.key(for: cacheKey(url)) }
        // Temp files of interrupted writes and spare folders nobody took are garbage.
        FileIO.removeTree(root + "/tmp")
        guard FileIO.makeDirectory(root + "/tmp") else {
            throw StorageError("cannot create \(root)/tmp: \(FileIO.errorText())")
        }
        FileIO.removeTree(root + "/spare")
        _ = FileIO.makeDirectory(root + "/spare")
        let routingKey = self.routingKey
        let result = IndexLoader(root: root, shards: max(1, count), route: { url in EntryKey(hex: routingKey(url))?.prefix32 ?? 0 },
                                 keys: keys).load()
        loaded = Locked(result)
        opening = result.migrated > 0 || result.removed > 0 ? (result.migrated, result.removed, result.scanned) : nil
    }

    /// What the start-up scan did, when it had to scan (for the first shard's log).
    package let opening: (migrated: Int, removed: Int, scanned: Int)?

    /// Shard `shard`'s index and journal facts; taken once, by the shard as it opens.
    func takeIndex(shard: Int) -> (index: EntryIndex, generation: Int, journalEntries: Int, rewrite: Bool) {
        loaded.withLock { loaded in
            guard var all = loaded else { return (EntryIndex(), 1, 0, true) }
            let index = all.indexes[shard]
            all.indexes[shard] = EntryIndex()
            loaded = all
            return (index, all.generations[shard], all.journalEntries[shard], all.rewrite)
        }
    }

    /// Every shard has opened: index files of shards that no longer exist go.
    package func everyShardOpened() {
        loaded.withLock { $0 = nil }
        let files = IndexFiles.list(in: root)
        for (shard, path) in files.snapshots where shard >= count { unlink(path) }
        for (shard, journals) in files.journals where shard >= count {
            for journal in journals { unlink(journal.path) }
        }
    }

    /// The shard owning a store key: its first 32 bits, so keys spread evenly and processes agree.
    package func shard(ofKey key: String) -> Int { Self.shard(ofKey: key, count: count) }

    package static func shard(ofKey key: String, count: Int) -> Int {
        guard count > 1 else { return 0 }
        // EntryKey's prefix32 from the first 8 hex digits alone: every request is routed by this.
        var value: UInt32 = 0
        for byte in key.utf8.prefix(8) {
            let digit = byte >= UInt8(ascii: "a") ? byte &- UInt8(ascii: "a") &+ 10 : byte &- UInt8(ascii: "0")
            value = value << 4 | UInt32(digit & 0xF)
        }
        return shard(ofRoute: value, count: count)
    }

    /// The shard owning the resources of `url` (stored with that URL).
    package func shard(ofURL url: String) -> Int { count == 1 ? 0 : shard(ofKey: routingKey(url)) }

    /// The store key of a cache key: SHA-256, keyed (HMAC) in an encrypted folder.
    package func key(for cacheKey: String) -> String {
        keys?.storeKey(for: cacheKey) ?? ResourceStore.key(for: cacheKey)
    }

    /// The primary store key of `url` (its variants are stored under keys of their own).
    package func primaryKey(ofURL url: String) -> String { routingKey(url) }
    /// The route of `url`'s entries: the first 32 bits of its primary key, shared by its variants.
    package func route(ofURL url: String) -> UInt32 { EntryKey(hex: routingKey(url))?.prefix32 ?? 0 }
    /// The shard of a route (the same as `shard(ofKey:)` of the primary key).
    static func shard(ofRoute route: UInt32, count: Int) -> Int { count > 1 ? Int(route % UInt32(count)) : 0 }

    package var totalBytes: Int64 { bytes.load(ordering: .relaxed) }
    func add(_ delta: Int64) { bytes.add(delta, ordering: .relaxed) }

    /// An entry's disk cost beyond its bytes (metadata block, inodes), counted by the size limit
    /// so a million tiny entries cannot fill the disk while the cached bytes look small.
    package static let entryOverhead: Int64 = 4096

    package var entryCount: Int64 { entries.load(ordering: .relaxed) }
    func addEntries(_ delta: Int64) { entries.add(delta, ordering: .relaxed) }

    /// What the size limit applies to: the cached bytes and each entry's overhead.
    package var usedBytes: Int64 { totalBytes + entryCount * Self.entryOverhead }

    func register(_ store: ResourceStore) {
        let shard = Shard(store: store, loop: store.loop, index: store.shardIndex)
        stores.withLock { $0.append(shard) }
    }

    /// The shared count over `maxBytes`: a round down to `lowWater` unless one runs (on a shard's loop).
    func evictionNeeded(maxBytes: Int64, lowWater: Int64) {
        guard usedBytes > maxBytes,
              !evicting.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        let shards = stores.withLock { $0 }
        let round = Locked(Round(expected: shards.count))
        // A stopped loop offers nothing: the round goes on without it.
        @Sendable func offered(_ offer: (candidates: [Candidate], pinned: Int64)?) {
            let complete = round.withLock { round -> Round? in
                if let offer {
                    round.candidates += offer.candidates
                    round.pinned += offer.pinned
                }
                round.expected -= 1
                return round.expected == 0 ? round : nil
            }
            if let complete { choose(complete, among: shards, target: lowWater) }
        }
        let excess = usedBytes - lowWater
        for shard in shards {
            let sent = shard.loop.execute { offered(shard.store.evictionOffer(excess: excess)) }
            if !sent { offered(nil) }
        }
    }

    /// An idle, unpinned resource a shard could delete.
    struct Candidate: Sendable {
        let lastAccess: Int64
        let key: EntryKey
        let bytes: Int64
        let shard: Int
    }

    private struct Round: Sendable {
        var expected: Int
        var candidates: [Candidate] = []
        var pinned: Int64 = 0
    }

    /// The least recently used of `candidates` until `excess` bytes are covered.
    static func victims(_ candidates: [Candidate], excess: Int64) -> [Candidate] {
        var left = excess
        var chosen: [Candidate] = []
        for candidate in candidates.sorted(by: { ($0.lastAccess, $0.key) < ($1.lastAccess, $1.key) }) where left > 0 {
            chosen.append(candidate)
            left -= candidate.bytes
        }
        return chosen
    }

    /// The oldest candidates of all shards until the count fits, each shard deleting its own if still
    /// idle; shard 0 hears of the pinned bytes (for its warning).
    private func choose(_ round: Round, among shards: [Shard], target: Int64) {
        let pinned = round.pinned
        if let first = shards.first(where: { $0.index == 0 }) {
            first.loop.execute { first.store.notePinned(pinned) }
        }
        let victims = Dictionary(grouping: Self.victims(round.candidates, excess: usedBytes - target), by: \.shard)
        let pending = Locked(shards.count)
        // Every shard answers (with nothing to do, or gone): the round is over then.
        @Sendable func done() {
            if pending.withLock({ $0 -= 1; return $0 == 0 }) { evicting.store(false, ordering: .releasing) }
        }
        for shard in shards {
            guard let mine = victims[shard.index] else {
                done()
                continue
            }
            let sent = shard.loop.execute {
                shard.store.evict(mine)
                done()
            }
            if !sent { done() }
        }
    }
}
