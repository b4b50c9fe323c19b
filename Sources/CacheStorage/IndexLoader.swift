import Glibc

/// Start-up: every shard's index read once, before any shard opens (the cost does not grow with the
/// number of loops): usually a snapshot per shard and its journals. A folder without index files is
/// scanned once (older-layout `resources/<key>/meta` entries move into the hashed one) and the
/// shards write snapshots; when the number of loops changed, records are dealt out by route.
struct IndexLoader {
    let root: String
    let shards: Int
    let route: (String) -> UInt32  // the route (first 32 bits of the primary key) of an entry's URL
    let keys: FolderKeys?

    struct Loaded: Sendable {
        var indexes: [EntryIndex]
        var generations: [Int]  // the journal generation each shard appends to from now on
        var journalEntries: [Int]  // journal entries each shard's index was rebuilt from (compaction)
        var rewrite: Bool  // built by a scan or for another shard count: each shard writes a snapshot at open
        var scanned = 0
        var migrated = 0
        var removed = 0
    }

    var resourcesRoot: String { root + "/resources" }

    func load() -> Loaded {
        let files = IndexFiles.list(in: root)
        if files.snapshots.isEmpty && files.journals.isEmpty { return scan() }
        var snapshots: [Int: IndexFiles.Snapshot] = [:]
        for (shard, path) in files.snapshots {
            // A damaged snapshot: the journals alone do not say everything.
            guard let snapshot = IndexFiles.readSnapshot(path, keys: keys), snapshot.shard == shard else { return scan() }
            snapshots[shard] = snapshot
        }
        let written = snapshots.values.first?.shards ?? ((files.journals.keys.max() ?? 0) + 1)
        let present = Set(files.snapshots.keys).union(files.journals.keys)
        var indexes: [Int: EntryIndex] = [:]
        var generations: [Int: Int] = [:]
        var entries: [Int: Int] = [:]
        for shard in present {
            let snapshot = snapshots[shard]
            var index = EntryIndex(capacity: (snapshot?.records.count ?? 0) + (snapshot?.records.count ?? 0) / 8 + 1024)
            for record in snapshot?.records ?? [] { index.put(record) }
            let from = snapshot?.generation ?? 0
            var last = from
            var replayed = 0
            for journal in files.journals[shard] ?? [] where journal.generation >= from {
                replayed += IndexFiles.replayJournal(journal.path, into: &index, keys: keys)
                last = max(last, journal.generation)
            }
            indexes[shard] = index
            // A new journal each start: the last one may end in a torn append.
            generations[shard] = last + 1
            entries[shard] = replayed
        }
        if written == shards && present == Set(0..<shards) && snapshots.values.allSatisfy({ $0.shards == shards }) {
            return Loaded(indexes: (0..<shards).map { indexes[$0]! }, generations: (0..<shards).map { generations[$0]! },
                          journalEntries: (0..<shards).map { entries[$0]! }, rewrite: false)
        }
        // Another number of loops wrote these: deal every record out again.
        var records: [ContiguousArray<EntryIndex.Record>] = []
        for shard in present.sorted() { records.append(indexes[shard]!.inOrder()) }
        indexes.removeAll()
        let next = (generations.values.max() ?? 0) + 1
        return Loaded(indexes: deal(records.flatMap { $0 }, sortByTime: present.count > 1),
                      generations: Array(repeating: next, count: shards),
                      journalEntries: Array(repeating: 0, count: shards), rewrite: true)
    }

    /// Records in LRU order (by time when from several orders), each to its route's shard.
    private func deal(_ records: [EntryIndex.Record], sortByTime: Bool) -> [EntryIndex] {
        var ordered = records
        if sortByTime {
            ordered.sort { a, b in
                if a.isPinned != b.isPinned { return a.isPinned }
                return (a.lastAccess, a.key) < (b.lastAccess, b.key)
            }
        }
        var counts = Array(repeating: 0, count: shards)
        for record in ordered { counts[StoreGroup.shard(ofRoute: record.route, count: shards)] += 1 }
        var indexes = counts.map { EntryIndex(capacity: $0 + $0 / 8 + 1024) }
        for record in ordered { indexes[StoreGroup.shard(ofRoute: record.route, count: shards)].put(record) }
        return indexes
    }

    // MARK: scanning (no index, or the older layout)

    /// Reads every entry's metadata, moving older-layout entries into the hashed layout.
    private func scan() -> Loaded {
        var loaded = Loaded(indexes: [], generations: [], journalEntries: [], rewrite: true)
        var records: [EntryIndex.Record] = []
        let times = Self.oldAccessTimes(root)
        var moved: [MetadataWrite] = []
        // The hashed layout first: moved entries then join it with their metadata written.
        for name in FileIO.listDirectory(resourcesRoot).sorted(by: { $0.utf8.count < $1.utf8.count }) {
            let path = resourcesRoot + "/" + name
            if name.utf8.count == 64 {
                // The older layout: a folder per entry.
                if let write = migrate(folder: path, key: name, accessed: times[name]) {
                    moved.append(write)
                } else {
                    loaded.removed += 1
                }
                FileIO.removeTree(path)
                if moved.count == 1024 { records += writeMigrated(&moved, loaded: &loaded) }
            } else if name.utf8.count == 1 {
                for second in FileIO.listDirectory(path) {
                    scanLevel(path + "/" + second, into: &records, loaded: &loaded)
                }
            }
        }
        records += writeMigrated(&moved, loaded: &loaded)
        loaded.scanned = records.count
        // The older release's access journals: their times are in the records now.
        for name in FileIO.listDirectory(root) where name == "access" || name.hasPrefix("access.") {
            unlink(root + "/" + name)
        }
        loaded.indexes = deal(records, sortByTime: true)
        loaded.generations = Array(repeating: 1, count: shards)
        loaded.journalEntries = Array(repeating: 0, count: shards)
        return loaded
    }

    /// One leaf folder: entries with valid metadata (`.meta`, else attribute) become records; the rest goes.
    private func scanLevel(_ folder: String, into records: inout [EntryIndex.Record], loaded: inout Loaded) {
        let names = FileIO.listDirectory(folder)
        var kept = Set<String>()
        var twoFiles = Set<Substring>()
        for name in names where name.hasSuffix(".meta") {
            let key = name.dropLast(5)
            twoFiles.insert(key)
            let paths = EntryPaths(resourcesRoot: resourcesRoot, key: String(key))
            if let record = record(paths: paths, key: String(key), oneFile: false, version: 0) {
                records.append(record.record)
                kept.insert(String(key) + "." + record.dataName)
                kept.insert(name)
            } else {
                loaded.removed += 1
            }
        }
        // One-file entries: a data file holding its metadata (a key's first such file wins).
        var oneFile = Set<Substring>()
        for name in names where !name.hasSuffix(".meta") {
            guard let dot = name.firstIndex(of: "."), case let key = name[..<dot], !twoFiles.contains(key),
                  !oneFile.contains(key), let version = EntryPaths.version(ofDataName: String(name[name.index(after: dot)...]))
            else { continue }
            let paths = EntryPaths(resourcesRoot: resourcesRoot, key: String(key))
            if let record = record(paths: paths, key: String(key), oneFile: true, version: version) {
                records.append(record.record)
                kept.insert(name)
                oneFile.insert(key)
            }
        }
        for name in names where !kept.contains(name) { unlink(folder + "/" + name) }
    }

    /// An entry's record; nil (a `.meta` file and what it names removed) for metadata claiming nothing.
    private func record(paths: EntryPaths, key: String, oneFile: Bool,
                        version: Int) -> (record: EntryIndex.Record, dataName: String)? {
        let stored = paths.readMetadata(keys: keys, oneFile: oneFile, version: version)
        guard let entryKey = EntryKey(hex: key), let stored, !stored.metadata.ranges.isEmpty else {
            if !oneFile {
                unlink(paths.meta)
                if let named = stored?.version { unlink(paths.data(version: named)) }
            }
            return nil
        }
        return (indexRecord(entryKey, stored.metadata, version: stored.version, oneFile: stored.oneFile),
                stored.metadata.dataName)
    }

    private func indexRecord(_ key: EntryKey, _ metadata: ResourceMetadata, version: Int,
                             oneFile: Bool) -> EntryIndex.Record {
        let flags = EntryIndex.Record.flags(pinned: metadata.pin != nil, version: version, oneFile: oneFile)
        return EntryIndex.Record(key: key, bytes: metadata.ranges.byteCount, lastAccess: metadata.lastAccess,
                                 route: route(metadata.url), flags: flags)
    }

    /// Moves an older-layout entry's data file into the hashed layout; `writeMigrated` writes its metadata.
    private func migrate(folder: String, key: String, accessed: Int64?) -> MetadataWrite? {
        guard EntryKey(hex: key) != nil, let bytes = FileIO.readAll(folder + "/meta"),
              var metadata = ResourceMetadata(decoding: bytes) else { return nil }
        let paths = EntryPaths(resourcesRoot: resourcesRoot, key: key)
        let oldData = folder + "/" + metadata.dataName
        metadata.ranges.clip(to: FileIO.fileSize(oldData) ?? 0)
        guard !metadata.ranges.isEmpty else { return nil }
        metadata.dataName = EntryPaths.dataName(version: 0)
        if let accessed { metadata.lastAccess = max(metadata.lastAccess, accessed) }
        guard paths.makeFolder(), rename(oldData, paths.data(version: 0)) == 0 else { return nil }
        return MetadataWrite(metadata: metadata, dataPath: paths.data(version: 0), metaPath: paths.meta, keys: keys, key: key,
                             attribute: true)
    }

    /// Writes the metadata of migrated entries; their records.
    private func writeMigrated(_ moved: inout [MetadataWrite], loaded: inout Loaded) -> [EntryIndex.Record] {
        defer { moved.removeAll(keepingCapacity: true) }
        // One file each where the file system takes it (no index yet: a refusal becomes a `.meta` file at once).
        let written = MetadataWrite.performFallingBack(moved, root: root, tempFolder: root + "/tmp")
        var records: [EntryIndex.Record] = []
        for (position, write) in moved.enumerated() {
            let name = write.metaPath.split(separator: "/").last!.dropLast(5)
            guard written[position].outcome.failure == nil, let key = EntryKey(hex: name) else {
                unlink(write.dataPath)
                loaded.removed += 1
                continue
            }
            records.append(indexRecord(key, write.metadata, version: 0, oneFile: written[position].oneFile))
            loaded.migrated += 1
        }
        return records
    }

    /// Last-access times from the older release's journals (`access`, `access.N`).
    private static func oldAccessTimes(_ root: String) -> [String: Int64] {
        var times: [String: Int64] = [:]
        for name in FileIO.listDirectory(root) where name == "access" || name.hasPrefix("access.") {
            guard let bytes = FileIO.readAll(root + "/" + name) else { continue }
            for line in bytes.split(separator: UInt8(ascii: "\n")) {
                let fields = line.split(separator: UInt8(ascii: " "))
                guard fields.count == 2, fields[0].count == 64,
                      let time = Int64(String(decoding: fields[1], as: UTF8.self)) else { continue }
                let key = String(decoding: fields[0], as: UTF8.self)
                times[key] = max(times[key] ?? 0, time)
            }
        }
        return times
    }
}

extension EntryIndex.Record {
    /// Bit 0 pinned, bit 1 one file (metadata in the data file's attribute), bits 8-31 the data version.
    package static func flags(pinned: Bool, version: Int, oneFile: Bool = false) -> UInt32 {
        (pinned ? Self.pinned : 0) | (oneFile ? Self.oneFile : 0) | UInt32(version & EntryPaths.maxVersion) << 8
    }

    package static let oneFile: UInt32 = 2
    package var isOneFile: Bool { flags & Self.oneFile != 0 }

    /// The entry's files, the metadata first (once it is gone nothing claims the data).
    func files(_ paths: EntryPaths) -> [String] {
        isOneFile ? [paths.data(version: version)] : [paths.meta, paths.data(version: version)]
    }

    package var version: Int { Int(flags >> 8) }
}
