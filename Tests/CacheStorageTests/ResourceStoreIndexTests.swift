import CacheIO
import Logging
import XCTest
@testable import CacheStorage

/// The store over its compact index, without a server: entries created,
/// written, flushed, evicted and reopened.
final class ResourceStoreIndexTests: XCTestCase, LoopTestCase {
    private var folder = ""
    var loop: EventLoop!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID())").path
        loop = try EventLoop()
    }

    override func tearDown() {
        loop.shutdown()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A request is routed by its store key's first 8 hex digits; an index
    /// record by its route (the key's first 32 bits): the two must pick the
    /// same shard, or a restarted proxy's entries would sit on the wrong loops.
    func testAKeyAndItsRouteFallInTheSameShard() {
        for n in 0..<500 {
            let key = ResourceStore.key(for: "http://o/\(n)")
            for count in 2...7 {
                XCTAssertEqual(StoreGroup.shard(ofKey: key, count: count),
                               StoreGroup.shard(ofRoute: EntryKey(hex: key)!.prefix32, count: count), "\(key) of \(count)")
            }
        }
    }

    func testBytesAreCountedOnceAndSurviveAReopen() throws {
        let (folder, loop) = (self.folder, self.loop!)
        let sizes: [Int64] = try onLoop {
            let store = try ResourceStore(root: folder, maxBytes: 1 << 30, loop: loop, logger: Logger(label: "t"))
            for n in 0..<20 {
                let resource = store.resource(storeKey: ResourceStore.key(for: "u\(n)"), url: "http://o/\(n)")
                resource.users += 1
                try [UInt8](repeating: UInt8(n), count: 1000).withUnsafeBytes { try resource.write($0, at: 0) }
                resource.users -= 1
            }
            let before = store.totalBytes
            store.flushAllNow()
            return [before, Int64(store.count), store.group.totalBytes]
        }
        XCTAssertEqual(sizes, [20_000, 20, 20_000])
    }
}

extension ResourceStoreIndexTests {
    func testImportRemoveAndEvictKeepTheCount() throws {
        let (folder, loop) = (self.folder, self.loop!)
        let source = folder + "-source"
        XCTAssertTrue(FileManager.default.createFile(atPath: source, contents: Data(repeating: 7, count: 300_000)))
        defer { unlink(source) }
        let store = try onLoop { LoopBound(try ResourceStore(root: folder, maxBytes: 1 << 30, loop: loop, logger: Logger(label: "t")), loop: loop) }
        for round in 0..<3 {
            let done = DispatchSemaphore(value: 0)
            _ = loop.execute {
                store.value.importFile(source, url: "http://o/x", cacheKey: "http://o/x", contentType: nil) { (_: Result<Void, StorageError>) in done.signal() }
            }
            done.wait()
            XCTAssertEqual(try onLoop { store.value.totalBytes }, 300_000, "round \(round)")
            try onLoop { store.value.removeAll() }
            XCTAssertEqual(try onLoop { store.value.totalBytes }, 0, "round \(round)")
        }
    }
}

extension ResourceStoreIndexTests {
    /// Opening reads one snapshot, not every entry: 100,000 entries whose
    /// metadata files do not even exist open at once (and are counted).
    func testOpeningAHundredThousandEntriesReadsOneFile() throws {
        let (folder, loop) = (self.folder, self.loop!)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var records = ContiguousArray<EntryIndex.Record>()
        for n in 0..<100_000 {
            let key = EntryKey(hex: ResourceStore.key(for: "http://o/\(n)"))!
            records.append(EntryIndex.Record(key: key, bytes: 4096, lastAccess: Int64(n), route: key.prefix32, flags: 0))
        }
        let snapshot = IndexFiles.encodeSnapshot(records, shard: 0, shards: 1, generation: 1)
        XCTAssertTrue(FileIO.writeAtomically(folder + "/index.0", snapshot, tempFolder: folder))
        let started = Date()
        let counts = try onLoop { () -> [Int64] in
            let store = try ResourceStore(root: folder, maxBytes: 1 << 40, loop: loop, logger: Logger(label: "t"))
            return [Int64(store.count), store.totalBytes]
        }
        let elapsed = Date().timeIntervalSince(started)
        print("opened 100,000 entries in \(Int(elapsed * 1000)) ms (debug build)")
        // Counted although no metadata file exists: the snapshot was read, nothing scanned.
        XCTAssertEqual(counts, [100_000, 409_600_000])
        XCTAssertLessThan(elapsed, 20, "a generous bound: the time is the bench's to judge (scenario 11)")
    }
}

extension ResourceStoreIndexTests {
    /// Tiny entries count what the disk holds for them: 2-byte bodies under
    /// a limit of 100 entries' overhead leave at most 100 entries, the oldest
    /// evicted first, however small their bytes.
    func testTheLimitCountsEachEntrysOverhead() throws {
        let (folder, loop) = (self.folder, self.loop!)
        let kept = try onLoop { () -> [Int] in
            let limit = 100 * StoreGroup.entryOverhead + 500
            let store = try ResourceStore(root: folder, maxBytes: limit, loop: loop, logger: Logger(label: "t"))
            for n in 0..<300 {
                let resource = store.resource(storeKey: ResourceStore.key(for: "u\(n)"), url: "http://o/\(n)")
                resource.users += 1
                try [UInt8](repeating: 1, count: 2).withUnsafeBytes { try resource.write($0, at: 0) }
                resource.setInfo(totalLength: 2, contentType: nil, etag: nil, lastModified: nil)
                resource.users -= 1
                store.evictIfNeeded()
            }
            let survivors = (0..<300).filter { store.index.contains(EntryKey(hex: ResourceStore.key(for: "u\($0)"))!) }
            XCTAssertLessThanOrEqual(store.group.usedBytes, limit)
            return survivors
        }
        XCTAssertLessThanOrEqual(kept.count, 100)
        XCTAssertGreaterThan(kept.count, 90)
        XCTAssertEqual(kept, Array((300 - kept.count)..<300), "the least recently used went first")
    }
}

extension ResourceStoreIndexTests {
    /// A hit journals its touch at most once per entry and second of the
    /// store's clock (each record is sealed in an encrypted folder), while
    /// the LRU order in memory follows every touch.
    func testTouchesAreJournaledOncePerEntryAndSecond() throws {
        let (folder, loop) = (self.folder, self.loop!)
        final class Clock: @unchecked Sendable { var now: Int64 = 5_000_000 }  // loop thread only
        let clock = Clock()
        let (a, b) = (ResourceStore.key(for: "a"), ResourceStore.key(for: "b"))
        let order = try onLoop { () -> [String] in
            let store = try ResourceStore(root: folder, maxBytes: 1 << 30, loop: loop, logger: Logger(label: "t"))
            store.clock = { clock.now }
            for (key, url) in [(a, "http://o/a"), (b, "http://o/b")] {
                let resource = store.resource(storeKey: key, url: url)
                resource.users += 1
                try [UInt8](repeating: 1, count: 100).withUnsafeBytes { try resource.write($0, at: 0) }
                resource.users -= 1
            }
            for (time, key) in [(10_000_500, a), (10_000_600, b), (10_000_700, a), (10_000_999, a),
                                (10_001_000, a), (10_001_400, b), (10_001_999, a)] {
                clock.now = Int64(time)
                store.touch(storeKey: key)
            }
            // A structural change writes the pending touches with it.
            let resource = store.resource(storeKey: ResourceStore.key(for: "c"), url: "http://o/c")
            resource.users += 1
            try [UInt8](repeating: 1, count: 100).withUnsafeBytes { try resource.write($0, at: 0) }
            resource.users -= 1
            return store.index.inOrder().map { $0.key.hex }
        }
        // In memory: a was touched last.
        XCTAssertEqual(Array(order.prefix(2)), [b, a])
        let journal = try XCTUnwrap(IndexFiles.list(in: folder).journals[0]?.last?.path)
        var touches: [(String, Int64)] = []
        _ = IndexFiles.replayJournal(journal) { op, record in
            if op == .touch { touches.append((record.key.hex, record.lastAccess)) }
        }
        XCTAssertEqual(touches.map { "\($0.0 == a ? "a" : "b")@\($0.1)" },
                       ["a@10000500", "b@10000600", "a@10001000", "b@10001400"])
    }
}
