import CacheIO
import Foundation
import Logging
import XCTest
@testable import CacheStorage

/// Eviction in the background (batches of files removed on the pool) and
/// first uses loaded off the loop, on a store without a server.
final class BackgroundEvictionTests: XCTestCase, LoopTestCase {
    private var folder = ""
    var loop: EventLoop!
    /// What an entry costs against the limit: 4 KiB of body and its overhead.
    private static let entryBytes = 4096
    private static let entryCost = Int64(entryBytes) + StoreGroup.entryOverhead

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("evict-\(UUID())").path
        loop = try EventLoop()
    }

    override func tearDown() {
        loop.shutdown()
        for path in [folder, folder + "-copy"] { try? FileManager.default.removeItem(atPath: path) }
    }

    private static func key(_ n: Int) -> String { ResourceStore.key(for: "http://o/\(n)") }

    /// The bytes of entry `n`: a pattern of its own, so a mix-up shows.
    private static func body(_ n: Int, count: Int = entryBytes) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n &* 7 &+ $0 >> 8) }
    }

    /// Stores entry `n` complete, as a download would; returns it (idle unless `hold`).
    @discardableResult
    private static func store(_ n: Int, in store: ResourceStore, count: Int = entryBytes, hold: Bool = false) throws -> Resource {
        let resource = store.resource(storeKey: key(n), url: "http://o/\(n)")
        resource.users += 1
        resource.setInfo(totalLength: Int64(count), contentType: "application/octet-stream", etag: nil, lastModified: nil)
        try body(n, count: count).withUnsafeBytes { try resource.write($0, at: 0) }
        if !hold { resource.users -= 1 }
        return resource
    }

    private static func dataFiles(in root: String) -> [String] {
        let files = FileManager.default.enumerator(atPath: root + "/resources")?.compactMap { $0 as? String } ?? []
        return files.filter { $0.contains(".data") }
    }

    /// A full cache filling on: the count never passes the limit by more than
    /// what arrives in one loop turn, the files on disk never by more than one
    /// batch, and an entry in use (read all along, byte for byte) and a pinned
    /// one are never evicted, however old.
    func testEvictionKeepsWithinTheLimitAndNeverRemovesAnEntryInUse() throws {
        let (folder, loop) = (self.folder, self.loop!)
        let limitEntries = 300
        let limit = Int64(limitEntries) * Self.entryCost
        let store = try onLoop {
            LoopBound(try ResourceStore(root: folder, maxBytes: limit, loop: loop, logger: Logger(label: "t")), loop: loop)
        }
        let busyBody = Self.body(999_999, count: 65_536)
        try onLoop {
            let busy = try Self.store(999_999, in: store.value, count: 65_536, hold: true)
            try Self.store(999_998, in: store.value).setPin("test")
            _ = busy
        }
        let perTurn = 20
        for turn in 0..<150 {
            let outcome = try onLoop { () -> [Int64] in
                for n in (turn * perTurn)..<((turn + 1) * perTurn) { try Self.store(n, in: store.value) }
                let busy = store.value.atHand(storeKey: Self.key(999_999))
                let read = try busy?.dataFile().read(0..<65_536)
                return [store.value.group.usedBytes, read == busyBody ? 1 : 0,
                        busy?.isRemoved == false && store.value.index.contains(EntryKey(hex: Self.key(999_999))!) ? 1 : 0]
            }
            XCTAssertLessThanOrEqual(outcome[0], limit + Int64(perTurn) * Self.entryCost + 65_536, "turn \(turn)")
            XCTAssertEqual(outcome[1], 1, "the entry in use reads back byte for byte (turn \(turn))")
            XCTAssertEqual(outcome[2], 1, "the entry in use stays (turn \(turn))")
            // On disk: the limit's entries, one batch on its way out, a turn's arrivals, the two kept ones.
            XCTAssertLessThanOrEqual(Self.dataFiles(in: folder).count, limitEntries + ResourceStore.evictionBatch + perTurn + 2,
                                     "turn \(turn)")
        }
        // The last batch of evicted files, and the files of entries evicted while their
        // metadata was being written (their write's end removes them): every file left
        // is then an entry of the index.
        try waitOnLoop("the last evicted files") {
            !store.value.isRemovingEvictedFiles && Self.dataFiles(in: folder).count == store.value.count
        }
        let settled = try onLoop { () -> [Int64] in
            let s = store.value
            return [s.group.usedBytes, Int64(s.count), Int64(s.evictions),
                    s.index.contains(EntryKey(hex: Self.key(999_998))!) ? 1 : 0]
        }
        XCTAssertLessThanOrEqual(settled[0], limit)
        XCTAssertGreaterThan(settled[2], 2_000, "entries were evicted")
        XCTAssertEqual(settled[3], 1, "the pinned entry stays")
        // Every data file left is an entry of the index (none lost track of), and within the limit.
        XCTAssertEqual(Int64(Self.dataFiles(in: folder).count), settled[1])
        XCTAssertLessThanOrEqual(settled[1], Int64(limitEntries) + 2)
        // The newest entries are the ones kept, byte for byte.
        let newest = try onLoop { () -> Bool in
            let resource = store.value.existing(storeKey: Self.key(2_999))
            return try resource?.dataFile().read(0..<Int64(Self.entryBytes)) == Self.body(2_999)
        }
        XCTAssertTrue(newest)
        // Once idle, the entry that was in use is the oldest: the next round takes it.
        try onLoop {
            store.value.atHand(storeKey: Self.key(999_999))?.users -= 1
            for n in 3_000..<3_100 { try Self.store(n, in: store.value) }
        }
        try waitOnLoop("the entry no longer in use evicted") {
            !store.value.index.contains(EntryKey(hex: Self.key(999_999))!) && !store.value.isRemovingEvictedFiles
        }
    }

    /// A restart: `entries` entries stored and flushed, the folder copied as the process left it,
    /// entry `n`'s metadata removed from the copy (a crash before its first flush), and a new
    /// store opened on the copy; with the paths of entry `n` there.
    private func restarted(entries: Int, withoutMetadata n: Int) throws -> (store: LoopBound<ResourceStore>, paths: EntryPaths) {
        let (folder, loop) = (self.folder, self.loop!)
        try onLoop {
            let store = try ResourceStore(root: folder, maxBytes: 1 << 30, loop: loop, logger: Logger(label: "t"))
            for n in 0..<entries { try Self.store(n, in: store) }
            store.flushAllNow()
        }
        let copy = folder + "-copy"
        try CacheFolderSupport.copy(folder, to: copy)
        let paths = EntryPaths(resourcesRoot: copy + "/resources", key: Self.key(n))
        XCTAssertTrue(CacheFolderSupport.removeMetadata(paths))
        let store = try onLoop {
            LoopBound(try ResourceStore(root: copy, maxBytes: 1 << 30, loop: loop, logger: Logger(label: "t")), loop: loop)
        }
        return (store, paths)
    }

    /// After a restart, an entry's first use reads its metadata and opens its
    /// data file on the pool: the loop reads nothing (`readsOnLoop`), the
    /// entry comes back complete with its file open, byte for byte. An entry
    /// whose metadata is gone is forgotten the same way, its data file
    /// removed on the pool.
    func testFirstUseAfterARestartDoesNotTouchTheFileSystemOnTheLoop() throws {
        let (store, removed) = try restarted(entries: 50, withoutMetadata: 13)
        let loaded = DispatchSemaphore(value: 0)
        let immediate = try onLoop { () -> [Bool] in
            var synchronous: [Bool] = []
            for n in [7, 13] {
                XCTAssertNil(store.value.atHand(storeKey: Self.key(n)))
                var returned = false
                var ranAtOnce = false
                store.value.whenAtHand(storeKey: Self.key(n)) {
                    if returned { loaded.signal() } else { ranAtOnce = true }
                }
                returned = true
                synchronous.append(ranAtOnce)
            }
            return synchronous
        }
        XCTAssertEqual(immediate, [false, false], "both entries are loaded on the pool, neither at once")
        XCTAssertEqual(loaded.wait(timeout: .now() + 20), .success)
        XCTAssertEqual(loaded.wait(timeout: .now() + 20), .success)
        let found = try onLoop { () -> [Int] in
            let s = store.value
            guard let resource = s.atHand(storeKey: Self.key(7)) else { return [-1] }
            let open = resource.hasOpenFile ? 1 : 0
            let exact = try resource.dataFile().read(0..<Int64(Self.entryBytes)) == Self.body(7) ? 1 : 0
            return [s.readsOnLoop, open, exact, resource.isComplete ? 1 : 0,
                    s.atHand(storeKey: Self.key(13)) == nil ? 1 : 0,
                    s.index.contains(EntryKey(hex: Self.key(13))!) ? 0 : 1, s.count]
        }
        XCTAssertEqual(found, [0, 1, 1, 1, 1, 1, 49],
                       "no read on the loop; file open; bytes exact; complete; the entry without metadata forgotten")
        try waitOnLoop("the forgotten entry's data file removed") { !store.value.isRemovingEvictedFiles }
        XCTAssertNil(FileIO.fileSize(removed.data(version: 0)))
        // Once at hand, the entry is found without any load.
        let again = try onLoop { () -> Bool in
            var now = false
            store.value.whenAtHand(storeKey: Self.key(7)) { now = true }
            return now
        }
        XCTAssertTrue(again)
    }

    /// A crash before an entry's first flush leaves its data file without
    /// metadata. The request that finds so on its first use, and one asking
    /// meanwhile, go on once those files are removed: the entry they make
    /// under the same key is kept (in the index, its bytes on disk), not
    /// served and dropped, which would send the next request to the origin again.
    func testTheRequestThatFindsAnEntryWithoutMetadataStoresItAgain() throws {
        let store = try restarted(entries: 5, withoutMetadata: 3).store
        final class Outcomes: @unchecked Sendable { var kept: [Bool] = [] }  // loop thread only
        let outcomes = Outcomes()
        let both = DispatchSemaphore(value: 0)
        try onLoop {
            let s = store.value
            for _ in 0..<2 {
                s.whenAtHand(storeKey: Self.key(3)) {
                    // What a miss does: the resource under the key, written.
                    let resource = s.atHand(storeKey: Self.key(3)) ?? (try? Self.store(3, in: s))
                    outcomes.kept.append(resource.map { !$0.isTransient && s.index.contains(EntryKey(hex: Self.key(3))!) } ?? false)
                    if outcomes.kept.count == 2 { both.signal() }
                }
            }
        }
        XCTAssertEqual(both.wait(timeout: .now() + 20), .success)
        let after = try onLoop { () -> [Bool] in
            let s = store.value
            s.flushAllNow()
            let resource = s.atHand(storeKey: Self.key(3))
            return outcomes.kept + [resource?.isComplete == true,
                                    (try? resource?.dataFile().read(0..<Int64(Self.entryBytes))) == Self.body(3)]
        }
        XCTAssertEqual(after, [true, true, true, true], "both requests find the entry kept; complete, bytes exact")
    }

    /// A crash in the middle of a batch (the process gone after half its
    /// files, one entry's metadata removed and its data not): the folder
    /// opens consistent. Every entry the index lists either comes back
    /// whole, byte for byte, or is forgotten with its files; no file is left
    /// that the index does not know; the counts match what is kept.
    func testCrashInTheMiddleOfABatchLeavesAConsistentStore() throws {
        let (folder, loop) = (self.folder, self.loop!)
        let total = 150
        let halfDone = DispatchSemaphore(value: 0)
        let goOn = DispatchSemaphore(value: 0)
        let firstBatch = DispatchSemaphore(value: 1)
        // Later removal tasks wait for the copy below: `cp` fails on a file removed while it copies.
        let copied = DispatchGroup()
        copied.enter()
        let store = try onLoop {
            LoopBound(try ResourceStore(root: folder, maxBytes: 1 << 30, loop: loop, logger: Logger(label: "t")), loop: loop)
        }
        let pending = try onLoop { () -> Int in
            let s = store.value
            for n in 0..<total { try Self.store(n, in: s) }
            s.flushAllNow()
            // The first removal task stops after an odd number of files: the last entry it reached keeps its data only.
            s.removeEvictedFiles = { paths in
                // Only the first task stalls (the batch's other half, and any later one, go through).
                guard firstBatch.wait(timeout: .now()) == .success else {
                    copied.wait()
                    for path in paths { unlink(path) }
                    return
                }
                let cut = paths.count / 2 | 1
                for path in paths.prefix(cut) { unlink(path) }
                halfDone.signal()
                goOn.wait()
                for path in paths.dropFirst(cut) { unlink(path) }
            }
            s.maxBytes = 100 * Self.entryCost
            s.evictIfNeeded()
            return s.pendingRemovals
        }
        XCTAssertEqual(halfDone.wait(timeout: .now() + 20), .success)
        // The crash: the folder as it is now, opened by a new process (store).
        let copy = folder + "-copy"
        let copying = Result { try CacheFolderSupport.copy(folder, to: copy) }
        goOn.signal()  // whatever the copy did: a stalled pool thread would hang the tear-down
        copied.leave()
        try copying.get()
        let reopened = try onLoop {
            LoopBound(try ResourceStore(root: copy, maxBytes: 1 << 30, loop: loop, logger: Logger(label: "t")), loop: loop)
        }
        XCTAssertEqual(try onLoop { reopened.value.count }, total, "the journal heard of no removal of the unfinished batch")
        let loads = DispatchSemaphore(value: 0)
        try onLoop {
            for n in 0..<total { reopened.value.whenAtHand(storeKey: Self.key(n)) { loads.signal() } }
        }
        for _ in 0..<total { XCTAssertEqual(loads.wait(timeout: .now() + 20), .success) }
        try waitOnLoop("the forgotten entries' files removed") { !reopened.value.isRemovingEvictedFiles }
        let (kept, exact, counted) = try onLoop { () -> (Set<Int>, Bool, Bool) in
            let s = reopened.value
            var kept = Set<Int>()
            var exact = true
            for n in 0..<total {
                guard let resource = s.atHand(storeKey: Self.key(n)) else {
                    exact = exact && !s.index.contains(EntryKey(hex: Self.key(n))!)
                    continue
                }
                kept.insert(n)
                exact = try exact && resource.isComplete
                    && resource.dataFile().read(0..<Int64(Self.entryBytes)) == Self.body(n)
            }
            return (kept, exact, s.totalBytes == Int64(kept.count * Self.entryBytes) && s.count == kept.count)
        }
        XCTAssertTrue(exact, "every entry kept reads back byte for byte; every other is out of the index")
        XCTAssertTrue(counted, "the counts are those of the entries kept")
        XCTAssertLessThan(kept.count, total, "the part of the batch done before the crash is gone")
        XCTAssertGreaterThanOrEqual(kept.count, total - pending, "only the batch's entries are gone")
        // No file the index does not know, none missing for an entry it lists.
        let files = Self.dataFiles(in: copy)
        XCTAssertEqual(files.count, kept.count)
        XCTAssertEqual(CacheFolderSupport.entriesWithMetadata(in: copy), kept.count)
        // The store that went on (no crash) finishes its batch and journals it.
        try waitOnLoop("the original store's batch") { !store.value.isRemovingEvictedFiles }
        XCTAssertLessThanOrEqual(try onLoop { store.value.group.usedBytes }, 100 * Self.entryCost)
    }

    /// Unlinks slower than misses (a disk busy syncing): once a batch's
    /// worth of evicted files waits for the pool, new entries are served but
    /// not kept (no file made), so the folder is never over its limit by
    /// more than one batch; once the batch is gone, they are kept again.
    func testABacklogOfRemovalsKeepsNewEntriesOffTheDisk() throws {
        let (folder, loop) = (self.folder, self.loop!)
        let goOn = DispatchSemaphore(value: 0)
        let store = try onLoop {
            LoopBound(try ResourceStore(root: folder, maxBytes: 1 << 30, loop: loop, logger: Logger(label: "t")), loop: loop)
        }
        let pending = try onLoop { () -> Int in
            let s = store.value
            for n in 0..<300 { try Self.store(n, in: s) }
            // Every removal task waits until the test opens the gate (then each passes it on).
            s.removeEvictedFiles = { paths in
                goOn.wait()
                goOn.signal()
                for path in paths { unlink(path) }
            }
            s.maxBytes = 20 * Self.entryCost
            s.evictIfNeeded()
            return s.pendingRemovals
        }
        XCTAssertEqual(pending, ResourceStore.evictionBatch, "one batch, stalled on the pool")
        let filesBefore = Self.dataFiles(in: folder).count
        // A miss now: its resource is transient, which a download passes
        // through without writing (Download.becomePassThrough).
        let passed = try onLoop { () -> [Bool] in
            let resource = store.value.resource(storeKey: Self.key(1_000), url: "http://o/1000")
            return [resource.isTransient, resource.hasOpenFile,
                    store.value.index.contains(EntryKey(hex: Self.key(1_000))!)]
        }
        XCTAssertEqual(passed, [true, false, false], "served, not kept")
        XCTAssertEqual(Self.dataFiles(in: folder).count, filesBefore, "no file made for it")
        goOn.signal()
        try waitOnLoop("the stalled batch and the rounds after it") { !store.value.isRemovingEvictedFiles }
        let kept = try onLoop { () -> [Bool] in
            let resource = try Self.store(1_001, in: store.value)
            return [resource.isTransient, store.value.index.contains(EntryKey(hex: Self.key(1_001))!),
                    store.value.group.usedBytes <= 20 * Self.entryCost]
        }
        XCTAssertEqual(kept, [false, true, true], "kept again once the backlog drained, within the limit")
    }
}
