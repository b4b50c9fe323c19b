import CacheStorage
import Foundation
import Glibc
import HTTPCache
import XCTest

/// Issue #27: the cache folder is trusted only when it is ours; import and
/// export handle regular files only and never share an inode.
final class FolderTrustTests: XCTestCase {
    private func open(_ folder: String) throws -> MediaCache {
        try MediaCache(configuration: HTTPCacheConfiguration(cacheDirectory: folder))
    }

    private func expectRefusal(_ folder: String, mentioning word: String, _ message: String) {
        do {
            let cache = try open(folder)
            cache.close()
            XCTFail("opened: \(message)")
        } catch {
            XCTAssertTrue("\(error)".contains(word), "\(message): \(error)")
        }
    }

    func testForeignOrWritableFoldersAreRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let open = directory.file("open").path
        XCTAssertEqual(mkdir(open, 0o700), 0)
        XCTAssertEqual(chmod(open, 0o777), 0)
        expectRefusal(open, mentioning: "writable by group or others", "a 0777 folder")
        XCTAssertFalse(FileManager.default.fileExists(atPath: open + "/resources"), "nothing was made in it")
        guard geteuid() == 0 else { throw XCTSkip("another owner needs root (chown)") }
        let foreign = directory.file("foreign").path
        XCTAssertEqual(mkdir(foreign, 0o700), 0)
        XCTAssertEqual(chown(foreign, 65534, 65534), 0)
        expectRefusal(foreign, mentioning: "belongs to user 65534", "another user's folder")
    }

    func testSymlinksInsideTheFolderAreNeverFollowed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // The victim's documents, and a folder whose `resources` points at them.
        let victim = directory.file("victim").path
        let stale = victim + "/" + String(repeating: "a", count: 64)  // looks like an entry without metadata
        try FileManager.default.createDirectory(atPath: stale, withIntermediateDirectories: true)
        XCTAssertTrue(FileManager.default.createFile(atPath: victim + "/letter.txt", contents: Data("mine".utf8)))
        XCTAssertTrue(FileManager.default.createFile(atPath: stale + "/notes.txt", contents: Data("notes".utf8)))
        let folder = directory.file("cache").path
        XCTAssertEqual(mkdir(folder, 0o700), 0)
        XCTAssertEqual(symlink(victim, folder + "/resources"), 0)
        expectRefusal(folder, mentioning: "resources", "a symlinked resources folder")
        XCTAssertTrue(FileManager.default.fileExists(atPath: victim + "/letter.txt"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: stale + "/notes.txt"), "nothing outside was deleted")
        // Tree removal never follows a link swapped in below the tree either.
        let tree = directory.file("tree").path
        try FileManager.default.createDirectory(atPath: tree + "/sub", withIntermediateDirectories: true)
        XCTAssertEqual(symlink(victim, tree + "/sub/link"), 0)
        XCTAssertEqual(symlink(victim + "/letter.txt", tree + "/file-link"), 0)
        FileIO.removeTree(tree)
        XCTAssertFalse(FileManager.default.fileExists(atPath: tree))
        XCTAssertTrue(FileManager.default.fileExists(atPath: victim + "/letter.txt"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: stale + "/notes.txt"))
    }

    /// Runs `work` on another thread; nil when it takes longer than `timeout` (it is then left running).
    func testImportTakesRegularFilesOnlyAndExportCopies() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = try open(directory.file("cache").path)
        defer { cache.close() }
        let fifo = directory.file("fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let source = try TestFile.random(size: 200_000, seed: 3, in: directory.url, name: "movie.mp4")
        let link = directory.file("link.mp4").path
        XCTAssertEqual(symlink(source.url.path, link), 0)
        for (path, what) in [("/dev/zero", "a device"), (fifo, "a FIFO"), (link, "a symlink"),
                             (directory.path, "a folder")] {
            let started = Date()
            var outcome = "imported"
            do {
                try await cache.importResource(for: "http://example.test/x.mp4", from: path)
            } catch {
                outcome = "\(error.code)"
            }
            XCTAssertEqual(outcome, "invalidArgument", "\(what) is refused")
            XCTAssertLessThan(Date().timeIntervalSince(started), 5, "\(what) is refused quickly")
        }
        XCTAssertTrue(cache.cachedResources().isEmpty)
        try await cache.importResource(for: "http://example.test/movie.mp4", from: source.url.path)
        XCTAssertEqual(cache.cachedResources().first?.cachedBytes, 200_000)
        let exported = directory.file("out.mp4").path
        try await cache.exportResource(for: "http://example.test/movie.mp4", to: exported)
        var info = stat()
        XCTAssertEqual(stat(exported, &info), 0)
        XCTAssertEqual(info.st_nlink, 1, "a copy, not a hard link to the cached data")
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(FileManager.default.contents(atPath: exported).map { Array($0) }, source.bytes)
        // Changing the export changes nothing the cache holds.
        XCTAssertEqual(truncate(exported, 0), 0)
        let again = directory.file("again.mp4").path
        try await cache.exportResource(for: "http://example.test/movie.mp4", to: again)
        XCTAssertEqual(FileManager.default.contents(atPath: again).map { Array($0) }, source.bytes)
    }
}
