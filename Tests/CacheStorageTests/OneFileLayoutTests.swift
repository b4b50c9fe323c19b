import CacheIO
import Foundation
import Logging
import XCTest
@testable import CacheStorage

/// One file per entry: the metadata in the data file's attribute
/// (`user.httpcache.meta`), on real files. Entries of the older layout (a
/// `.meta` file beside the data) are written by forcing the fallback (the
/// attribute refused), then converted in the background.
final class OneFileLayoutTests: XCTestCase, LoopTestCase {
    private var folder = ""
    var loop: EventLoop!
    private static let entryBytes = 3000
    private static let userKey = [UInt8](repeating: 0x5a, count: 32)

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("onefile-\(UUID())").path
        loop = try EventLoop()
    }

    override func tearDown() {
        MetadataAttribute.failWritesWith.store(0, ordering: .relaxed)
        loop.shutdown()
        for suffix in ["", "-2", "-3", "-4"] { try? FileManager.default.removeItem(atPath: folder + suffix) }
    }

    private func open(_ root: String, key: [UInt8]? = nil) throws -> LoopBound<ResourceStore> {
        let loop = self.loop!
        return try onLoop {
            LoopBound(try ResourceStore(root: root, maxBytes: 1 << 30, loop: loop, logger: Logger(label: "t"),
                                        encryptionKey: key), loop: loop)
        }
    }

    private static func url(_ n: Int) -> String { "http://o/\(n)" }

    private static func body(_ n: Int) -> [UInt8] {
        (0..<entryBytes).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ n &* 29 &+ $0 >> 7) }
    }

    /// Stores entry `n` complete, as a download would, and leaves it idle.
    private static func store(_ n: Int, in store: ResourceStore) throws {
        let resource = store.resource(storeKey: store.storeKey(for: url(n)), url: url(n))
        resource.users += 1
        resource.setInfo(totalLength: Int64(entryBytes), contentType: "video/mp4", etag: "\"e\(n)\"", lastModified: nil)
        try body(n).withUnsafeBytes { try resource.write($0, at: 0) }
        resource.users -= 1
    }

    private func fill(_ store: LoopBound<ResourceStore>, _ entries: Range<Int>) throws {
        try onLoop {
            for n in entries { try Self.store(n, in: store.value) }
            store.value.flushAllNow()
        }
    }

    /// Entries stored in the older layout (a `.meta` file each, as the
    /// fallback writes them, which is what an earlier release left).
    private func fillInTheOlderLayout(_ store: LoopBound<ResourceStore>, _ entries: Range<Int>) throws {
        MetadataAttribute.failWritesWith.store(ENOTSUP, ordering: .relaxed)
        defer { MetadataAttribute.failWritesWith.store(0, ordering: .relaxed) }
        try fill(store, entries)
    }

    /// Loads every entry (on the pool, as requests do) and reads it back:
    /// the entries whose bytes are exact, and those missing from the index.
    private func readBack(_ store: LoopBound<ResourceStore>, _ entries: Range<Int>) throws -> (exact: Int, missing: Int, wrong: [Int]) {
        let loaded = DispatchSemaphore(value: 0)
        try onLoop {
            for n in entries { store.value.whenAtHand(storeKey: store.value.storeKey(for: Self.url(n))) { loaded.signal() } }
        }
        for _ in entries { XCTAssertEqual(loaded.wait(timeout: .now() + 30), .success) }
        return try onLoop {
            var (exact, missing, wrong) = (0, 0, [Int]())
            for n in entries {
                let key = store.value.storeKey(for: Self.url(n))
                guard let resource = store.value.atHand(storeKey: key) else {
                    if store.value.index.contains(EntryKey(hex: key)!) { wrong.append(n) } else { missing += 1 }
                    continue
                }
                if try resource.isComplete && resource.dataFile().read(0..<Int64(Self.entryBytes)) == Self.body(n) {
                    exact += 1
                } else {
                    wrong.append(n)
                }
            }
            return (exact, missing, wrong)
        }
    }

    /// Index records of the store: how many say one file, and how many entries in all.
    private func layouts(_ store: LoopBound<ResourceStore>) throws -> (oneFile: Int, all: Int) {
        try onLoop { (store.value.index.all.filter(\.isOneFile).count, store.value.count) }
    }

    private static func metaFiles(_ root: String) -> Int {
        CacheFolderSupport.files(in: root).filter { $0.hasSuffix(".meta") }.count
    }

    /// Every file under resources/ belongs to an entry of the index, in the
    /// layout its record names (no `.meta` file beside a one-file entry).
    private func filesKnownToTheIndex(_ store: LoopBound<ResourceStore>, root: String) throws -> [String] {
        let records = try onLoop { store.value.index.all.map { ($0.key.hex, $0.isOneFile) } }
        let layout = Dictionary(uniqueKeysWithValues: records)
        return CacheFolderSupport.files(in: root).filter { path in
            let name = path.split(separator: "/").last.map(String.init) ?? path
            guard let dot = name.firstIndex(of: "."), let oneFile = layout[String(name[..<dot])] else { return true }
            return oneFile && name.hasSuffix(".meta")
        }
    }

    // MARK: tests

    /// New entries are one file each, their metadata in the attribute;
    /// after a restart every entry is served byte for byte from that one
    /// file, loaded on the pool.
    /// The names every existing folder holds: `resources/a/bc/<key>.data…` by the key's first three digits.
    func testAnEntrysFilesAreNamedByTheFirstDigitsOfItsKey() {
        let key = ResourceStore.key(for: "http://o/named")
        let paths = EntryPaths(resourcesRoot: "/c/resources", key: key)
        let digits = Array(key)
        XCTAssertEqual(paths.base, "/c/resources/\(digits[0])/\(digits[1])\(digits[2])/\(key)")
        XCTAssertEqual([paths.data(version: 0), paths.data(version: 2), paths.meta],
                       [paths.base + ".data", paths.base + ".data-2", paths.base + ".meta"])
        XCTAssertEqual(paths.folderNumber, Int(String(digits[0..<3]), radix: 16))
    }

    func testEntriesAreOneFileEachAndSurviveARestart() throws {
        let store = try open(folder)
        try fill(store, 0..<60)
        XCTAssertEqual(CacheFolderSupport.files(in: folder).count, 60, "one file per entry")
        XCTAssertEqual(Self.metaFiles(folder), 0)
        XCTAssertEqual(CacheFolderSupport.entriesWithMetadata(in: folder), 60, "each holds its metadata")
        XCTAssertEqual(try layouts(store).oneFile, 60, "the index says one file")
        let root = folder
        let first = try onLoop { EntryPaths(resourcesRoot: root + "/resources", key: store.value.storeKey(for: Self.url(0))) }
        let text = String(decoding: try XCTUnwrap(MetadataAttribute.read(path: first.data(version: 0))), as: UTF8.self)
        XCTAssertTrue(text.hasPrefix(ResourceMetadata.magic) && text.contains("url http://o/0\n"), text)

        try CacheFolderSupport.copy(folder, to: folder + "-2")  // the restart
        let reopened = try open(folder + "-2")
        let read = try readBack(reopened, 0..<60)
        XCTAssertEqual(read.exact, 60, "wrong: \(read.wrong)")
        XCTAssertEqual(try onLoop { reopened.value.readsOnLoop }, 0)
        XCTAssertEqual(try layouts(reopened).oneFile, 60)
        XCTAssertEqual(CacheFolderSupport.files(in: folder + "-2").count, 60)
        XCTAssertEqual(try onLoop { reopened.value.isUpgrading }, false, "nothing to convert")
    }

    /// A folder of the older layout (two files per entry) is converted in
    /// the background: no `.meta` file left, the index saying one file for
    /// every entry, every entry byte for byte, and again after a restart.
    func testOlderEntriesAreConvertedToOneFile() throws {
        let total = 300
        let old = try open(folder)
        try fillInTheOlderLayout(old, 0..<total)
        XCTAssertEqual(Self.metaFiles(folder), total, "built in the older layout")
        XCTAssertEqual(try layouts(old).oneFile, 0)

        try CacheFolderSupport.copy(folder, to: folder + "-2")
        let store = try open(folder + "-2")
        try waitOnLoop("the conversion") { !store.value.isUpgrading }
        XCTAssertEqual(try onLoop { store.value.upgradedEntries }, total)
        XCTAssertEqual(Self.metaFiles(folder + "-2"), 0, "no .meta file left")
        XCTAssertEqual(CacheFolderSupport.files(in: folder + "-2").count, total, "one file per entry")
        XCTAssertEqual(try layouts(store).oneFile, total, "the index says one file for every entry")
        let read = try readBack(store, 0..<total)
        XCTAssertEqual(read.exact, total, "wrong: \(read.wrong)")

        try onLoop { store.value.flushAllNow() }
        try CacheFolderSupport.copy(folder + "-2", to: folder + "-3")
        let again = try open(folder + "-3")
        XCTAssertEqual(try layouts(again).oneFile, total)
        XCTAssertEqual(try readBack(again, 0..<total).exact, total)
        XCTAssertEqual(try onLoop { again.value.isUpgrading }, false)
    }

    /// A crash in the middle of a conversion batch (attributes written, some
    /// `.meta` files removed, the journal told of some): the folder opens
    /// consistent, every entry byte for byte or gone, no file the index does
    /// not know, and the conversion finishes there.
    func testCrashInTheMiddleOfAConversionBatchLeavesAConsistentStore() throws {
        let total = 150
        try fillInTheOlderLayout(try open(folder), 0..<total)
        try CacheFolderSupport.copy(folder, to: folder + "-2")

        let halfDone = DispatchSemaphore(value: 0)
        let goOn = DispatchSemaphore(value: 0)
        let (started, finished) = (Locked(0), Locked(0))
        let cut = 41
        let loop = self.loop!
        let root = folder + "-2"
        let store = try onLoop { () -> LoopBound<ResourceStore> in
            let s = try ResourceStore(root: root, maxBytes: 1 << 30, loop: loop, logger: Logger(label: "t"))
            // Set before the conversion's first batch (it starts on a later turn of the loop).
            // The first `cut` removals go through; the next ones remove their
            // file, then wait for the gate (then pass it on) before the loop
            // hears of it: entries whose `.meta` file is gone while the index
            // still says two files.
            s.removeConvertedMetadata = { path in
                let n = started.withLock { count -> Int in
                    count += 1
                    return count
                }
                unlink(path)
                if finished.withLock({ count -> Int in
                    count += 1
                    return count
                }) == cut + 1 { halfDone.signal() }
                guard n > cut else { return }
                goOn.wait()
                goOn.signal()
            }
            return LoopBound(s, loop: loop)
        }
        XCTAssertEqual(halfDone.wait(timeout: .now() + 30), .success)
        // The crash: the folder as it is now, opened by a new process (store).
        try CacheFolderSupport.copy(root, to: folder + "-3")
        goOn.signal()
        let left = Self.metaFiles(folder + "-3")
        XCTAssertLessThanOrEqual(left, total - cut - 1, "stopped after \(cut) .meta files and some")
        XCTAssertGreaterThanOrEqual(left, total - cut - 8, "the pool's threads at most")

        // What the index said at the crash, read in the turn that opens it: on
        // later turns its own conversion (and the first loads, which find the
        // attribute where the `.meta` file went) change it.
        let crashed = folder + "-3"
        let (reopened, oneFileAtOpen) = try onLoop { () -> (LoopBound<ResourceStore>, Int) in
            let s = try ResourceStore(root: crashed, maxBytes: 1 << 30, loop: loop, logger: Logger(label: "t"))
            return (LoopBound(s, loop: loop), s.index.all.filter(\.isOneFile).count)
        }
        XCTAssertLessThanOrEqual(oneFileAtOpen, cut, "the index said one file for the first ones at most")
        let read = try readBack(reopened, 0..<total)
        XCTAssertEqual(read.wrong, [], "every entry byte for byte or gone")
        XCTAssertEqual(read.exact + read.missing, total)
        XCTAssertEqual(read.exact, total, "here nothing is lost: each entry has its .meta file or its attribute")
        XCTAssertEqual(try filesKnownToTheIndex(reopened, root: folder + "-3"), [], "no file unknown to the index")
        try waitOnLoop("the conversion after the crash") { !reopened.value.isUpgrading }
        XCTAssertEqual(Self.metaFiles(folder + "-3"), 0)
        XCTAssertEqual(try layouts(reopened).oneFile, total)
        XCTAssertEqual(try readBack(reopened, 0..<total).exact, total)
        // The store that went on (no crash) finishes its conversion.
        try waitOnLoop("the original store's conversion") { !store.value.isUpgrading }
        XCTAssertEqual(Self.metaFiles(root), 0)
    }

    /// Writing everything at once (what a stop does) while a conversion runs
    /// ends the pass: nothing waits on it any more, each entry is one file or
    /// keeps its `.meta` file, every one byte for byte, and the next start
    /// converts the rest.
    func testWritingEverythingEndsAConversionInProgress() throws {
        let total = 60
        try fillInTheOlderLayout(try open(folder), 0..<total)
        try CacheFolderSupport.copy(folder, to: folder + "-2")
        let store = try open(folder + "-2")
        // On the turn after the open's: the first batch has started, its loads on the pool.
        try onLoop { store.value.flushAllNow() }
        XCTAssertEqual(try onLoop { store.value.isUpgrading }, false, "the pass ended")
        let read = try readBack(store, 0..<total)
        XCTAssertEqual(read.exact, total, "wrong: \(read.wrong)")
        XCTAssertEqual(try filesKnownToTheIndex(store, root: folder + "-2"), [])

        try CacheFolderSupport.copy(folder + "-2", to: folder + "-3")
        let next = try open(folder + "-3")
        try waitOnLoop("the next start's conversion") { !next.value.isUpgrading }
        XCTAssertEqual(Self.metaFiles(folder + "-3"), 0)
        XCTAssertEqual(try readBack(next, 0..<total).exact, total)
    }

    /// A file system that refuses user attributes (ENOTSUP, injected: a real
    /// one cannot refuse on demand): entries keep two files, the folder
    /// remembers, and they are served right after a restart; a value too big
    /// (E2BIG) sends that entry alone to a `.meta` file.
    func testRefusedAttributesKeepTwoFiles() throws {
        MetadataAttribute.failWritesWith.store(EOPNOTSUPP, ordering: .relaxed)
        let store = try open(folder)
        try fill(store, 0..<40)
        XCTAssertEqual(try onLoop { store.value.group.usesAttributes }, false, "the folder remembers")
        XCTAssertEqual(Self.metaFiles(folder), 40)
        XCTAssertEqual(CacheFolderSupport.files(in: folder).count, 80, "two files per entry")
        XCTAssertEqual(try layouts(store).oneFile, 0)
        XCTAssertEqual(try readBack(store, 0..<40).exact, 40)

        try CacheFolderSupport.copy(folder, to: folder + "-2")
        let reopened = try open(folder + "-2")  // still refused: its conversion stops at the first refusal
        try waitOnLoop("the refused conversion") { !reopened.value.isUpgrading }
        XCTAssertEqual(try readBack(reopened, 0..<40).exact, 40)
        XCTAssertEqual(Self.metaFiles(folder + "-2"), 40)
        XCTAssertEqual(try onLoop { reopened.value.upgradedEntries }, 0)

        // Too big for this entry only: it keeps a .meta file, the next one does not.
        MetadataAttribute.failWritesWith.store(E2BIG, ordering: .relaxed)
        let third = try open(folder + "-3")
        try fill(third, 0..<1)
        MetadataAttribute.failWritesWith.store(0, ordering: .relaxed)
        try fill(third, 1..<2)
        XCTAssertEqual(try onLoop { third.value.group.usesAttributes }, true)
        XCTAssertEqual(Self.metaFiles(folder + "-3"), 1)
        XCTAssertEqual(CacheFolderSupport.files(in: folder + "-3").count, 3)
        XCTAssertEqual(try layouts(third).oneFile, 1)
        XCTAssertEqual(try readBack(third, 0..<2).exact, 2)
    }

    /// A new version (the origin's content changed) before its first byte:
    /// its data file does not exist yet, so its metadata has nowhere to go
    /// and claims nothing; the flush is no storage fault, and once bytes
    /// come they are kept under the new version, byte for byte after a restart.
    func testANewVersionBeforeItsFirstByteFlushesWithoutAFault() throws {
        let store = try open(folder)
        try fill(store, 0..<1)
        let key = try onLoop { store.value.storeKey(for: Self.url(0)) }
        try onLoop {
            let resource = try XCTUnwrap(store.value.existing(storeKey: key))
            resource.users += 1
            resource.reset(url: Self.url(0))
            resource.flush()
        }
        try waitOnLoop("the flush") {
            guard let resource = store.value.atHand(storeKey: key) else { return false }
            return !resource.flushing && !resource.flushQueued
        }
        XCTAssertEqual(try onLoop { store.value.isDiskFull }, false, "no storage fault")
        let newBytes = Self.body(7)
        try onLoop {
            let resource = try XCTUnwrap(store.value.atHand(storeKey: key))
            resource.setInfo(totalLength: Int64(Self.entryBytes), contentType: "video/mp4", etag: "\"v2\"", lastModified: nil)
            try newBytes.withUnsafeBytes { try resource.write($0, at: 0) }
            resource.users -= 1
            store.value.flushAllNow()
        }
        XCTAssertEqual(CacheFolderSupport.files(in: folder), [String(key.prefix(1)) + "/" + String(key.dropFirst().prefix(2)) + "/" + key + ".data-1"],
                       "one file: the new version's")
        try CacheFolderSupport.copy(folder, to: folder + "-2")
        let reopened = try open(folder + "-2")
        let loaded = DispatchSemaphore(value: 0)
        try onLoop { reopened.value.whenAtHand(storeKey: key) { loaded.signal() } }
        XCTAssertEqual(loaded.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(try onLoop { try reopened.value.atHand(storeKey: key)?.dataFile().read(0..<Int64(Self.entryBytes)) }, newBytes)
    }

    /// An encrypted folder: the attribute holds the sealed metadata (no URL
    /// in the clear); a rekey re-seals one-file entries (and `.meta` files
    /// of older ones); everything is served byte for byte under the new key.
    func testEncryptedOneFileEntriesSurviveARekey() throws {
        let old = try open(folder, key: Self.userKey)
        try fillInTheOlderLayout(old, 0..<10)
        XCTAssertEqual(Self.metaFiles(folder), 10)
        try CacheFolderSupport.copy(folder, to: folder + "-2")
        let store = try open(folder + "-2", key: Self.userKey)
        // The conversion first: `fill` writes everything at once, which ends a pass in progress.
        try waitOnLoop("the conversion") { !store.value.isUpgrading }
        XCTAssertEqual(try onLoop { store.value.upgradedEntries }, 10)
        try fill(store, 10..<40)  // one file each
        XCTAssertEqual(Self.metaFiles(folder + "-2"), 0)
        XCTAssertEqual(CacheFolderSupport.files(in: folder + "-2").count, 40)
        for path in CacheFolderSupport.files(in: folder + "-2") {
            let sealed = try XCTUnwrap(MetadataAttribute.read(path: folder + "-2/resources/" + path))
            XCTAssertNil(String(decoding: sealed, as: UTF8.self).range(of: "http://o/"), "sealed: no URL in the clear")
        }

        try CacheFolderSupport.copy(folder + "-2", to: folder + "-3")
        let newKey = [UInt8](repeating: 0x33, count: 32)
        let summary = try FolderRekey.run(root: folder + "-3", oldKey: Self.userKey, newKey: newKey)
        XCTAssertEqual(summary.entries, 40)
        XCTAssertEqual(CacheFolderSupport.files(in: folder + "-3").count, 40, "one file per entry after the rekey")
        XCTAssertThrowsError(try open(folder + "-3", key: Self.userKey), "the old key opens nothing")
        let rekeyed = try open(folder + "-3", key: newKey)
        XCTAssertEqual(try onLoop { rekeyed.value.count }, 40)
        XCTAssertEqual(try layouts(rekeyed).oneFile, 40, "the scan recognises one-file entries")
        let read = try readBack(rekeyed, 0..<40)
        XCTAssertEqual(read.exact, 40, "wrong: \(read.wrong)")
    }
}
