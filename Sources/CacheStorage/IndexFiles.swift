import CacheIO
import Glibc

/// The compact index on disk: per shard, a snapshot (`index.N`) of every record in LRU order and
/// journals (`journal.N.G`) of the changes since, so start-up reads one file and the journals instead
/// of every entry's metadata (after Squid's `swap.state`). A snapshot of generation G covers journals
/// up to G-1: appends switch to journal G, the records are renamed into place, and only then older
/// journals go; a crash leaves the old snapshot with every journal since, or the new one.
///
/// Binary, little-endian, fixed-size records (snapshot 56 bytes, journal 64 with a check value, so
/// a torn last append is skipped). Encrypted (`keys`): a snapshot sealed whole, each journal entry
/// alone (92 bytes: nonce, ciphertext, tag), so a torn last entry fails to open and ends the replay.
package enum IndexFiles {
    static let snapshotMagic: UInt64 = 0x3158_4544_4E49_4348  // "HCINDEX1"
    static let headerSize = 40
    static let recordSize = 56
    static let journalEntrySize = 64

    enum Op: UInt8 {
        case put = 1, touch = 2, remove = 3
    }

    static func snapshotName(shard: Int) -> String { "index.\(shard)" }
    static func journalName(shard: Int, generation: Int) -> String { "journal.\(shard).\(generation)" }

    // MARK: writing

    /// The snapshot's bytes: header, records, check value of the records.
    static func encodeSnapshot(_ records: ContiguousArray<EntryIndex.Record>, shard: Int, shards: Int,
                               generation: Int, keys: FolderKeys? = nil) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(headerSize + records.count * recordSize + 8)
        for field in [snapshotMagic, UInt64(shards), UInt64(shard), UInt64(generation), UInt64(records.count)] {
            append(&bytes, field)
        }
        for record in records { appendRecord(&bytes, record) }
        append(&bytes, check(bytes, from: headerSize))
        guard let keys else { return bytes }
        return keys.seal(bytes, context: snapshotContext) ?? []
    }

    static let snapshotContext = "httpcache index"
    static let journalContext = "httpcache journal"

    static func journalEntrySize(keys: FolderKeys?) -> Int {
        keys == nil ? journalEntrySize : journalEntrySize + Sealing.overhead
    }

    /// One journal entry (sealed when `keys` are given).
    static func encodeEntry(_ op: Op, _ record: EntryIndex.Record, into bytes: inout [UInt8], keys: FolderKeys? = nil) {
        guard let keys else { return encodePlainEntry(op, record, into: &bytes) }
        var plain: [UInt8] = []
        encodePlainEntry(op, record, into: &plain)
        bytes += keys.seal(plain, context: journalContext) ?? []
    }

    /// Op (1), 3 zero bytes, route (4), key, bytes, time, flags (52), check (4). Built in place and
    /// appended once: hits journal touches, and field-by-field appends cost ~1,000 instructions each.
    private static func encodePlainEntry(_ op: Op, _ record: EntryIndex.Record, into bytes: inout [UInt8]) {
        withUnsafeTemporaryAllocation(byteCount: journalEntrySize, alignment: 8) { entry in
            entry.storeBytes(of: UInt32(op.rawValue).littleEndian, toByteOffset: 0, as: UInt32.self)
            entry.storeBytes(of: record.route.littleEndian, toByteOffset: 4, as: UInt32.self)
            storeRecordBody(record, into: entry, at: 8)
            let sum = check(UnsafeRawBufferPointer(entry), from: 0, to: journalEntrySize - 4)
            entry.storeBytes(of: UInt32(truncatingIfNeeded: sum).littleEndian, toByteOffset: 60, as: UInt32.self)
            bytes.append(contentsOf: UnsafeRawBufferPointer(entry))
        }
    }

    // MARK: reading

    package struct Snapshot {
        package var shards: Int
        package var shard: Int
        package var generation: Int
        package var records: ContiguousArray<EntryIndex.Record>
    }

    /// Reads a snapshot; nil when missing, cut or corrupt.
    package static func readSnapshot(_ path: String, keys: FolderKeys? = nil) -> Snapshot? {
        guard let stored = FileIO.readAll(path),
              let bytes = keys == nil ? stored : keys!.open(stored, context: snapshotContext),
              bytes.count >= headerSize + 8 else { return nil }
        return bytes.withUnsafeBytes { raw -> Snapshot? in
            guard raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self) == snapshotMagic else { return nil }
            let shards = Int(raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            let shard = Int(raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
            let generation = Int(raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
            let count = Int(raw.loadUnaligned(fromByteOffset: 32, as: UInt64.self))
            guard count >= 0, count <= (raw.count - headerSize) / recordSize,
                  raw.count == headerSize + count * recordSize + 8,
                  raw.loadUnaligned(fromByteOffset: raw.count - 8, as: UInt64.self)
                    == check(raw, from: headerSize, to: raw.count - 8) else { return nil }
            var records = ContiguousArray<EntryIndex.Record>()
            records.reserveCapacity(count)
            var offset = headerSize
            for _ in 0..<count {
                let route = raw.loadUnaligned(fromByteOffset: offset + 52, as: UInt32.self)
                records.append(readRecordBody(raw, at: offset, route: route))
                offset += recordSize
            }
            return Snapshot(shards: shards, shard: shard, generation: generation, records: records)
        }
    }

    /// Replays a journal over `index` up to the first damaged entry (a torn append); how many were valid.
    @discardableResult
    package static func replayJournal(_ path: String, into index: inout EntryIndex, keys: FolderKeys? = nil) -> Int {
        replayJournal(path, keys: keys) { op, record in
            switch op {
            case .put: index.put(record)
            case .touch: index.touch(record.key, at: record.lastAccess)
            case .remove: index.remove(record.key)
            }
        }
    }

    static func replayJournal(_ path: String, keys: FolderKeys? = nil, _ apply: (Op, EntryIndex.Record) -> Void) -> Int {
        guard var bytes = FileIO.readAll(path) else { return 0 }
        if let keys {
            // Each sealed entry opened; the first that does not (a torn append) ends the journal.
            let size = journalEntrySize(keys: keys)
            var plain: [UInt8] = []
            plain.reserveCapacity(bytes.count / size * journalEntrySize)
            var offset = 0
            bytes.withUnsafeBytes { raw in
                while offset + size <= raw.count,
                      let entry = keys.open(UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + size)]),
                                            context: journalContext) {
                    plain += entry
                    offset += size
                }
            }
            bytes = plain
        }
        return bytes.withUnsafeBytes { raw -> Int in
            var offset = 0
            var applied = 0
            while offset + journalEntrySize <= raw.count {
                let stored = raw.loadUnaligned(fromByteOffset: offset + 60, as: UInt32.self)
                guard stored == UInt32(truncatingIfNeeded: check(raw, from: offset, to: offset + 60)),
                      let op = Op(rawValue: raw[offset]) else { break }
                let route = raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                apply(op, readRecordBody(raw, at: offset + 8, route: route))
                applied += 1
                offset += journalEntrySize
            }
            return applied
        }
    }

    /// Index files in `root`: snapshots by shard, journals by shard and generation.
    static func list(in root: String) -> (snapshots: [Int: String], journals: [Int: [(generation: Int, path: String)]]) {
        var snapshots: [Int: String] = [:]
        var journals: [Int: [(generation: Int, path: String)]] = [:]
        for name in FileIO.listDirectory(root) {
            let parts = name.split(separator: ".")
            if parts.count == 2, parts[0] == "index", let shard = Int(parts[1]) {
                snapshots[shard] = root + "/" + name
            } else if parts.count == 3, parts[0] == "journal", let shard = Int(parts[1]), let generation = Int(parts[2]) {
                journals[shard, default: []].append((generation, root + "/" + name))
            }
        }
        for shard in journals.keys { journals[shard]!.sort { $0.generation < $1.generation } }
        return (snapshots, journals)
    }

    // MARK: encoding helpers

    /// A snapshot's record: the body (52), then the route (4).
    private static func appendRecord(_ bytes: inout [UInt8], _ record: EntryIndex.Record) {
        withUnsafeTemporaryAllocation(byteCount: recordSize, alignment: 8) { raw in
            storeRecordBody(record, into: raw, at: 0)
            raw.storeBytes(of: record.route.littleEndian, toByteOffset: 52, as: UInt32.self)
            bytes.append(contentsOf: UnsafeRawBufferPointer(raw))
        }
    }

    /// A snapshot record's and a journal entry's body: key (32), bytes, last access (8 each), flags (4).
    private static func storeRecordBody(_ record: EntryIndex.Record, into raw: UnsafeMutableRawBufferPointer, at offset: Int) {
        raw.storeBytes(of: record.key.w0.littleEndian, toByteOffset: offset, as: UInt64.self)
        raw.storeBytes(of: record.key.w1.littleEndian, toByteOffset: offset + 8, as: UInt64.self)
        raw.storeBytes(of: record.key.w2.littleEndian, toByteOffset: offset + 16, as: UInt64.self)
        raw.storeBytes(of: record.key.w3.littleEndian, toByteOffset: offset + 24, as: UInt64.self)
        raw.storeBytes(of: UInt64(bitPattern: record.bytes).littleEndian, toByteOffset: offset + 32, as: UInt64.self)
        raw.storeBytes(of: UInt64(bitPattern: record.lastAccess).littleEndian, toByteOffset: offset + 40, as: UInt64.self)
        raw.storeBytes(of: record.flags.littleEndian, toByteOffset: offset + 48, as: UInt32.self)
    }

    private static func readRecordBody(_ raw: UnsafeRawBufferPointer, at offset: Int, route: UInt32) -> EntryIndex.Record {
        let key = EntryKey(raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self),
                           raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self),
                           raw.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self),
                           raw.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self))
        return EntryIndex.Record(key: key, bytes: raw.loadUnaligned(fromByteOffset: offset + 32, as: Int64.self),
                                 lastAccess: raw.loadUnaligned(fromByteOffset: offset + 40, as: Int64.self),
                                 route: route, flags: raw.loadUnaligned(fromByteOffset: offset + 48, as: UInt32.self))
    }

    private static func append(_ bytes: inout [UInt8], _ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A 64-bit check value of bytes [from, to): catches torn and damaged files, not tampering.
    static func check(_ bytes: [UInt8], from start: Int, to end: Int? = nil) -> UInt64 {
        bytes.withUnsafeBytes { check($0, from: start, to: end ?? $0.count) }
    }

    static func check(_ raw: UnsafeRawBufferPointer, from start: Int, to end: Int) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var offset = start
        while offset + 8 <= end {
            hash = (hash ^ raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0x0000_0100_0000_01b3
            hash ^= hash >> 29
            offset += 8
        }
        while offset < end {
            hash = (hash ^ UInt64(raw[offset])) &* 0x0000_0100_0000_01b3
            offset += 1
        }
        return hash
    }
}
