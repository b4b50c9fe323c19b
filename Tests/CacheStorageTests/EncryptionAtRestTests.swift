import Foundation
import XCTest
import CacheIO
@testable import CacheStorage

/// Encryption at rest below the store: data units, sealed index files, the
/// folder key and its check.
final class EncryptionAtRestTests: XCTestCase {
    private func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("atrest-\(UUID())").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    private func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
    }

    private let userKey = [UInt8](repeating: 0x42, count: 32)

    /// Pieces of any size written in any order (partial units, rewrites of
    /// bytes already there) read back exact at any range; the file holds
    /// none of them in the clear.
    func testDataFileRandomWritesAndReadsAreExact() throws {
        let root = try folder()
        let keys = try XCTUnwrap(FolderKeys.open(root: root, userKey: userKey, isNew: true))
        let plain = randomBytes(300_000, seed: 5)
        let file = try DataFile(path: root + "/d", cipher: keys.cipher(key: String(repeating: "a", count: 64), version: 0))
        XCTAssertTrue(file.isEncrypted)
        var state: UInt64 = 9
        func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(bound))
        }
        // Cut into pieces of 1 byte to 70 KiB, written shuffled; some written twice.
        var pieces: [Range<Int>] = []
        var at = 0
        while at < plain.count {
            let end = min(plain.count, at + 1 + next(70_000))
            pieces.append(at..<end)
            at = end
        }
        pieces += pieces.prefix(5)
        for index in pieces.indices.reversed() { pieces.swapAt(index, next(index + 1)) }
        for piece in pieces {
            try plain[piece].withUnsafeBytes { try file.write($0, at: Int64(piece.lowerBound)) }
        }
        for _ in 0..<300 {
            let start = next(plain.count)
            let end = min(plain.count, start + 1 + next(20_000))
            XCTAssertEqual(file.read(Int64(start)..<Int64(end)), Array(plain[start..<end]), "\(start)..<\(end)")
        }
        XCTAssertEqual(file.read(0..<Int64(plain.count)), plain)
        let disk = try XCTUnwrap(FileIO.readAll(root + "/d"))
        XCTAssertEqual(disk.count % UnitCipher.unitSize, 0, "whole units on disk")
        XCTAssertFalse(contains(disk, Array(plain[1000..<1016])))
        // Another file's cipher (another version) does not read it.
        let other = try DataFile(path: root + "/d", cipher: keys.cipher(key: String(repeating: "a", count: 64), version: 1))
        XCTAssertNotEqual(other.read(0..<4096), Array(plain[0..<4096]))
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    /// The key check: a wrong key, no key for an encrypted folder and a key
    /// for a folder made without one are refused with their codes.
    func testFolderKeyCheckAndMismatches() throws {
        let root = try folder()
        let keys = try XCTUnwrap(FolderKeys.open(root: root, userKey: userKey, isNew: true))
        let again = try XCTUnwrap(FolderKeys.open(root: root, userKey: userKey, isNew: false))
        XCTAssertEqual(keys.storeKey(for: "http://o/a"), again.storeKey(for: "http://o/a"), "the same folder key")
        XCTAssertNotEqual(keys.storeKey(for: "http://o/a"), ResourceStore.key(for: "http://o/a"), "keyed, not SHA-256")
        XCTAssertThrowsError(try FolderKeys.open(root: root, userKey: [UInt8](repeating: 1, count: 32), isNew: false)) {
            XCTAssertEqual(($0 as? StorageError)?.code, EKEYREJECTED)
        }
        XCTAssertThrowsError(try FolderKeys.open(root: root, userKey: nil, isNew: false)) {
            XCTAssertEqual(($0 as? StorageError)?.code, ENOKEY)
        }
        let plainFolder = try folder()
        XCTAssertThrowsError(try FolderKeys.open(root: plainFolder, userKey: userKey, isNew: false)) {
            XCTAssertEqual(($0 as? StorageError)?.code, EKEYREJECTED)
        }
        XCTAssertNil(try FolderKeys.open(root: plainFolder, userKey: nil, isNew: false))
        // Rekeyed: the new key opens the folder with the same names and a new
        // content key; the old one no longer opens it.
        let newKey = [UInt8](repeating: 0x17, count: 32)
        _ = try FolderRekey.run(root: root, oldKey: userKey, newKey: newKey)
        let rekeyed = try XCTUnwrap(FolderKeys.open(root: root, userKey: newKey, isNew: false))
        XCTAssertEqual(rekeyed.storeKey(for: "x"), keys.storeKey(for: "x"))
        XCTAssertEqual(rekeyed.material.nameSeed, keys.material.nameSeed)
        XCTAssertNotEqual(rekeyed.material.contentKey, keys.material.contentKey)
        XCTAssertNil(keys.open(try XCTUnwrap(rekeyed.seal([1, 2, 3], context: "c")), context: "c"), "old content keys open nothing new")
        XCTAssertThrowsError(try FolderKeys.open(root: root, userKey: userKey, isNew: false))
        XCTAssertThrowsError(try FolderRekey.run(root: root, oldKey: userKey, newKey: newKey))
        // An interrupted rekey's journal: the folder opens with no key, and only the new key finishes it.
        try Data("HCREKEY1 damaged".utf8).write(to: URL(fileURLWithPath: root + "/" + FolderRekey.journalName))
        XCTAssertThrowsError(try FolderKeys.open(root: root, userKey: newKey, isNew: false)) {
            XCTAssertEqual(($0 as? StorageError)?.code, EKEYREJECTED)
            XCTAssertTrue("\($0)".contains("interrupted"), "\($0)")
        }
        XCTAssertThrowsError(try FolderRekey.run(root: root, oldKey: newKey, newKey: userKey)) {
            XCTAssertTrue("\($0)".contains("another new key"), "\($0)")
        }
    }

    /// The store keys' HMAC (two SHA-256 runs, no OpenSSL lookup) is OpenSSL's HMAC-SHA256.
    func testFastHMACMatchesOpenSSL() {
        for (keyLength, messageLength) in [(32, 0), (32, 5), (32, 200), (64, 64), (1, 1000)] {
            let key = randomBytes(keyLength, seed: UInt64(keyLength))
            let message = randomBytes(messageLength, seed: UInt64(messageLength) + 99)
            XCTAssertEqual(Digest.HMACKey(key).mac(message), Digest.hmacSHA256(key: key, message: message))
        }
    }

    func testKeyFileTakesBytesOrHex() {
        let bytes = randomBytes(32, seed: 3)
        XCTAssertEqual(FolderKeys.parseKey(bytes), bytes)
        let hex = bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        XCTAssertEqual(FolderKeys.parseKey(Array((hex.uppercased() + "\n").utf8)), bytes)
        XCTAssertNil(FolderKeys.parseKey(Array("short".utf8)))
        XCTAssertNil(FolderKeys.parseKey(Array(String(hex.dropLast()).utf8) + [UInt8(ascii: "g")]))
    }

    /// Sealed snapshot and journal: read back with the keys, refused
    /// without them; a torn sealed entry ends the replay.
    func testSealedSnapshotAndJournal() throws {
        let root = try folder()
        let keys = try XCTUnwrap(FolderKeys.open(root: root, userKey: userKey, isNew: true))
        var index = EntryIndex()
        for n in 0..<50 {
            let key = EntryKey(hex: keys.storeKey(for: "u\(n)"))!
            index.put(EntryIndex.Record(key: key, bytes: Int64(n), lastAccess: Int64(n), route: key.prefix32, flags: 0))
        }
        let snapshot = IndexFiles.encodeSnapshot(index.inOrder(), shard: 0, shards: 1, generation: 2, keys: keys)
        XCTAssertTrue(FileIO.writeAtomically(root + "/index.0", snapshot, tempFolder: root))
        XCTAssertEqual(IndexFiles.readSnapshot(root + "/index.0", keys: keys)?.records.count, 50)
        XCTAssertNil(IndexFiles.readSnapshot(root + "/index.0"))
        let journal = IndexLog(root: root, shard: 0, generation: 2, keys: keys)
        for record in index.inOrder().prefix(3) { journal.append(.remove, record) }
        journal.write()
        let fd = open(journal.path, O_WRONLY | O_APPEND)
        XCTAssertEqual(write(fd, [UInt8](repeating: 7, count: 60), 60), 60)
        close(fd)
        var rebuilt = index
        XCTAssertEqual(IndexFiles.replayJournal(journal.path, into: &rebuilt, keys: keys), 3)
        XCTAssertEqual(rebuilt.count, 47)
    }
}
