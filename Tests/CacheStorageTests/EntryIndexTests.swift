import XCTest
@testable import CacheStorage

final class EntryIndexTests: XCTestCase {
    private func key(_ n: Int) -> EntryKey {
        EntryKey(hex: ResourceStore.key(for: "http://origin.test/\(n)"))!
    }

    private func record(_ n: Int, bytes: Int64 = 100, time: Int64? = nil, pinned: Bool = false) -> EntryIndex.Record {
        EntryIndex.Record(key: key(n), bytes: bytes, lastAccess: time ?? Int64(n), route: key(n).prefix32,
                          flags: EntryIndex.Record.flags(pinned: pinned, version: 0))
    }

    func testKeyHexRoundTrips() {
        let hex = ResourceStore.key(for: "x")
        XCTAssertEqual(EntryKey(hex: hex)?.hex, hex)
        XCTAssertNil(EntryKey(hex: String(hex.dropLast())))
        XCTAssertNil(EntryKey(hex: hex.uppercased()))
        XCTAssertEqual(MemoryLayout<EntryIndex.Record>.stride, 64)
    }

    func testLRUOrderFollowsTouchesAndSkipsPinned() {
        var index = EntryIndex()
        for n in 0..<10 { index.put(record(n)) }
        index.touch(key(3), at: 100)
        index.touch(key(0), at: 101)
        index.put(record(5, pinned: true))
        let order = index.oldestFirst().map(\.key)
        XCTAssertEqual(order, [1, 2, 4, 6, 7, 8, 9, 3, 0].map(key))
        XCTAssertEqual(index.pinnedBytes, 100)
        XCTAssertEqual(index.totalBytes, 1000)
        // Unpinned, it rejoins the order where its last use puts it.
        index.put(record(5))
        XCTAssertEqual(index.oldestFirst().map(\.key), [1, 2, 4, 5, 6, 7, 8, 9, 3, 0].map(key))
        XCTAssertEqual(index.pinnedBytes, 0)
    }

    /// Removals in any order keep every other entry findable (backward-shift
    /// deletion) and the list intact, against a dictionary as the model.
    func testRandomOperationsMatchAModel() {
        var index = EntryIndex()
        var model: [Int: Int64] = [:]
        var order: [Int] = []
        var generator = SystemRandomNumberGenerator()
        for step in 0..<20_000 {
            let n = Int.random(in: 0..<3_000, using: &generator)
            switch Int.random(in: 0..<4, using: &generator) {
            case 0, 1:
                let bytes = Int64(step % 997)
                if model[n] == nil { order.append(n) }
                model[n] = bytes
                index.put(record(n, bytes: bytes))
            case 2:
                XCTAssertEqual(index.remove(key(n))?.bytes, model.removeValue(forKey: n))
                order.removeAll { $0 == n }
            default:
                index.touch(key(n), at: Int64(step))
                if model[n] != nil {
                    order.removeAll { $0 == n }
                    order.append(n)
                }
            }
        }
        XCTAssertEqual(index.count, model.count)
        XCTAssertEqual(index.totalBytes, model.values.reduce(0, +))
        for (n, bytes) in model { XCTAssertEqual(index.find(key(n))?.bytes, bytes) }
        XCTAssertEqual(index.oldestFirst().map(\.key), order.map(key))
        XCTAssertFalse(index.contains(key(3_001)))
    }

    func testSnapshotAndJournalRebuildTheSameIndex() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("index-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var index = EntryIndex()
        for n in 0..<500 { index.put(record(n, pinned: n % 50 == 0)) }
        index.touch(key(7), at: 1_000)
        let snapshot = IndexFiles.encodeSnapshot(index.inOrder(), shard: 0, shards: 1, generation: 3)
        XCTAssertTrue(FileIO.writeAtomically(folder + "/index.0", snapshot, tempFolder: folder))
        let journal = IndexLog(root: folder, shard: 0, generation: 3)
        var live = index
        for (op, n) in [(IndexFiles.Op.put, 900), (.touch, 2), (.remove, 4), (.put, 901), (.touch, 900)] {
            let entry = record(n, time: 2_000 + Int64(n))
            journal.append(op, entry)
            switch op {
            case .put: live.put(entry)
            case .touch: live.touch(entry.key, at: entry.lastAccess)
            case .remove: live.remove(entry.key)
            }
        }
        journal.write()
        // A torn last append is skipped, not misread.
        let fd = open(journal.path, O_WRONLY | O_APPEND)
        XCTAssertEqual(write(fd, [UInt8](repeating: 7, count: 30), 30), 30)
        close(fd)

        let read = try XCTUnwrap(IndexFiles.readSnapshot(folder + "/index.0"))
        XCTAssertEqual(read.generation, 3)
        var rebuilt = EntryIndex()
        for record in read.records { rebuilt.put(record) }
        XCTAssertEqual(IndexFiles.replayJournal(journal.path, into: &rebuilt), 5)
        XCTAssertTrue(rebuilt.inOrder() == live.inOrder(), "the rebuilt index differs")
        XCTAssertEqual(rebuilt.totalBytes, live.totalBytes)
        XCTAssertEqual(rebuilt.pinnedBytes, live.pinnedBytes)

        // A damaged snapshot is refused (the folder is then scanned instead).
        var damaged = snapshot
        damaged[100] ^= 1
        XCTAssertTrue(FileIO.writeAtomically(folder + "/index.0", damaged, tempFolder: folder))
        XCTAssertNil(IndexFiles.readSnapshot(folder + "/index.0"))
    }
}
