import Foundation
@testable import HTTPCacheC
import CacheIO
import Synchronization
import XCTest

/// The hc_cache functions called from Swift, in the debug build: the C
/// contract (codes, snprintf, ownership, the registry hc_close uses) without
/// the release install. examples/c/*.c check the installed library.
final class CacheHandleTests: XCTestCase {
    private var folders: [String] = []

    override func tearDown() {
        for folder in folders { try? FileManager.default.removeItem(atPath: folder) }
        folders = []
    }

    private func newFolder() -> String {
        let path = NSTemporaryDirectory() + "hc-capi-\(UUID().uuidString)"
        folders.append(path)
        return path
    }

    private func config(folder: String, _ options: [(String, String)] = []) -> OpaquePointer {
        let config = hc_config_new()!
        XCTAssertEqual(hc_config_set(config, "cache-dir", folder), 0)
        for (name, value) in options { XCTAssertEqual(hc_config_set(config, name, value), 0, name) }
        return config
    }

    private func open(_ config: OpaquePointer) -> (Int32, OpaquePointer?) {
        var cache: OpaquePointer?
        let result = hc_open(config, &cache)
        return (result, cache)
    }

    /// encryption-key-file: a folder made with a key opens only with it
    /// (HC_EKEY otherwise, with or without another key); an unreadable key
    /// file is refused by hc_config_set.
    func testEncryptionKeyFile() throws {
        let folder = newFolder()
        let keys = newFolder()
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        try Data(repeating: 5, count: 32).write(to: URL(fileURLWithPath: keys + "/a.key"))
        try Data(String(repeating: "ab", count: 32).utf8).write(to: URL(fileURLWithPath: keys + "/b.key"))
        for name in ["a.key", "b.key"] {  // a key others can read is refused
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keys + "/" + name)
        }
        let withA = config(folder: folder, [("encryption-key-file", keys + "/a.key")])
        defer { hc_config_free(withA) }
        let (made, cache) = open(withA)
        XCTAssertEqual(made, 0)
        hc_close(cache)
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/encryption"))
        let withB = config(folder: folder, [("encryption-key-file", keys + "/b.key")])
        defer { hc_config_free(withB) }
        XCTAssertEqual(open(withB).0, -12, "HC_EKEY: a wrong key")
        let without = config(folder: folder)
        defer { hc_config_free(without) }
        XCTAssertEqual(open(without).0, -12, "HC_EKEY: no key for an encrypted folder")
        let (again, reopened) = open(withA)
        XCTAssertEqual(again, 0, "nothing was spoiled by the refusals")
        hc_close(reopened)
        XCTAssertEqual(hc_config_set(withA, "encryption-key-file", keys + "/missing.key"), -12, "HC_EKEY: no such key file")
    }

    func testSameFolderTwiceIsBusyAndFreeAgainAfterClose() throws {
        let folder = newFolder()
        let options = config(folder: folder)
        defer { hc_config_free(options) }
        let (first, cache) = open(options)
        XCTAssertEqual(first, 0)
        XCTAssertNotNil(cache)
        var second: OpaquePointer? = OpaquePointer(bitPattern: 1)
        XCTAssertEqual(hc_open(options, &second), -4, "HC_EBUSY")
        XCTAssertNil(second, "*out is NULL on failure")
        // The same folder under another spelling is the same lock.
        let other = config(folder: folder + "/.")
        defer { hc_config_free(other) }
        XCTAssertEqual(open(other).0, -4)
        // Another folder opens beside it.
        let elsewhere = config(folder: newFolder())
        defer { hc_config_free(elsewhere) }
        let (third, thirdCache) = open(elsewhere)
        XCTAssertEqual(third, 0)
        hc_close(thirdCache)
        hc_close(cache)
        let (again, reopened) = open(options)
        XCTAssertEqual(again, 0, "hc_close unlocks the folder")
        hc_close(reopened)
    }

    func testOpenNeedsACacheDirectory() {
        let options = hc_config_new()
        defer { hc_config_free(options) }
        var cache: OpaquePointer?
        XCTAssertEqual(hc_open(options, &cache), -1)
        XCTAssertNil(cache)
        XCTAssertEqual(hc_open(nil, &cache), -1)
        XCTAssertEqual(hc_open(options, nil), -1)
    }

    func testSecurityOptionsAreValidated() {
        let options = hc_config_new()
        defer { hc_config_free(options) }
        for (name, good) in [("allow-origin", "cdn.example"), ("allow-origin", "127.0.0.1:8080"),
                             ("allow-origin", "[::1]:9"), ("server-name", "media.example"),
                             ("max-connections-per-client", "16"), ("allow-origin", "")] {
            XCTAssertEqual(hc_config_set(options, name, good), 0, "\(name) \(good)")
        }
        for (name, bad) in [("allow-origin", "http://x/"), ("allow-origin", "host:0"), ("server-name", "a b"),
                            ("max-connections-per-client", "0"), ("max-connections-per-client", "x")] {
            XCTAssertEqual(hc_config_set(options, name, bad), -1, "\(name) \(bad)")  // HC_EINVAL
        }
    }

    func testServePortAndProxyURL() throws {
        let options = config(folder: newFolder(), [("loops", "2")])
        defer { hc_config_free(options) }
        for bad in ["0", "257", "two", "-1", ""] {
            let refused = config(folder: newFolder(), [("loops", "2")])
            defer { hc_config_free(refused) }
            XCTAssertEqual(hc_config_set(refused, "loops", bad), -1, bad)  // HC_EINVAL
            XCTAssertEqual(open(refused).0, -1, "a failed set makes the configuration unusable: \(bad)")
        }
        let (result, opened) = open(options)
        XCTAssertEqual(result, 0)
        let cache = try XCTUnwrap(opened)
        defer { hc_close(cache) }
        let origin = "https://example.com/media/movie.mp4?token=a%20b&x=1"
        XCTAssertEqual(hc_port(cache), -1, "no port before hc_serve")
        XCTAssertEqual(hc_proxy_url(cache, origin, nil, 0), -1, "no proxy URL before hc_serve")

        XCTAssertEqual(hc_serve(cache), 0)
        XCTAssertEqual(hc_serve(cache), -1, "already serving")
        let port = hc_port(cache)
        XCTAssertGreaterThan(port, 0)

        let length = hc_proxy_url(cache, origin, nil, 0)
        XCTAssertGreaterThan(length, 0)
        var buffer = [CChar](repeating: 0x7f, count: Int(length) + 1)
        XCTAssertEqual(hc_proxy_url(cache, origin, &buffer, buffer.count), length)
        let url = text(buffer)
        XCTAssertEqual(url.utf8.count, Int(length))
        XCTAssertTrue(url.hasPrefix("http://127.0.0.1:\(port)/p/"), url)
        XCTAssertTrue(url.hasSuffix("/movie.mp4"), url)

        var small = [CChar](repeating: 0x7f, count: 12)
        XCTAssertEqual(hc_proxy_url(cache, origin, &small, 10), length, "the full length, truncated copy")
        XCTAssertEqual(text(small), String(url.prefix(9)))
        XCTAssertEqual(small[10], 0x7f, "nothing written past size")
        var one: CChar = 0x7f
        XCTAssertEqual(hc_proxy_url(cache, origin, &one, 1), length)
        XCTAssertEqual(one, 0)

        XCTAssertEqual(hc_proxy_url(cache, "ftp://example.com/a.mp4", nil, 0), -1)
        XCTAssertEqual(hc_proxy_url(cache, "/relative.mp4", nil, 0), -1)
        XCTAssertEqual(hc_proxy_url(cache, nil, nil, 0), -1)
        XCTAssertEqual(hc_proxy_url(cache, origin, nil, 5), -1, "NULL buffer with a size")
        XCTAssertEqual(hc_proxy_url(nil, origin, nil, 0), -1)
    }

    func testCacheOperations() throws {
        let folder = newFolder()
        let options = config(folder: folder)
        defer { hc_config_free(options) }
        let (result, opened) = open(options)
        XCTAssertEqual(result, 0)
        let cache = try XCTUnwrap(opened)
        defer { hc_close(cache) }
        XCTAssertEqual(hc_cache_size(cache), 0)

        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        let source = folder + "-source.bin"
        let copy = folder + "-copy.bin"
        folders += [source, copy]
        XCTAssertTrue(FileManager.default.createFile(atPath: source, contents: Data(bytes)))
        let url = "http://example.com/a.mp4"
        XCTAssertEqual(hc_cache_import(cache, url, source), 0)
        XCTAssertEqual(hc_cache_size(cache), 100_000)
        XCTAssertEqual(hc_cache_export(cache, url, copy), 0)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: copy)), Data(bytes))

        let seen = Box()
        let list: HCListFunction = { userdata, url, cached, total, complete in
            let box = Unmanaged<Box>.fromOpaque(userdata!).takeUnretainedValue()
            box.entries.withLock { $0.append("\(String(cString: url!)) \(cached) \(total) \(complete)") }
        }
        XCTAssertEqual(hc_cache_list(cache, list, Unmanaged.passUnretained(seen).toOpaque()), 0)
        XCTAssertEqual(seen.entries.withLock { $0 }, ["\(url) 100000 100000 1"])
        XCTAssertEqual(hc_cache_list(cache, nil, nil), -1)

        XCTAssertEqual(hc_cache_export(cache, "http://example.com/none.mp4", copy), -5, "HC_ENOTFOUND")
        XCTAssertEqual(hc_cache_import(cache, url, folder + "/no-such-file"), -5)
        XCTAssertEqual(hc_cache_remove(cache, url), 0)
        XCTAssertEqual(hc_cache_remove(cache, url), -5)
        XCTAssertEqual(hc_cache_size(cache), 0)
        XCTAssertEqual(hc_cache_import(cache, url, source), 0)
        XCTAssertEqual(hc_cache_import(cache, url + "?2", source), 0)
        XCTAssertEqual(hc_cache_clear(cache), 0)
        XCTAssertEqual(hc_cache_size(cache), 0)
        XCTAssertEqual(hc_cache_size(nil), -1)
        XCTAssertEqual(hc_cache_remove(nil, url), -1)
    }

    func testCloseEndsRegisteredDependentsFirst() throws {
        let options = config(folder: newFolder())
        defer { hc_config_free(options) }
        let (result, opened) = open(options)
        XCTAssertEqual(result, 0)
        let cache = try XCTUnwrap(opened)
        let handle = try XCTUnwrap(CacheHandle.from(cache))
        let dependents = handle.dependents
        let open = FakeDependent(cache: handle), removed = FakeDependent(cache: handle)
        XCTAssertTrue(dependents.add(open))
        XCTAssertTrue(dependents.add(removed))
        dependents.remove(removed)
        XCTAssertEqual(dependents.count, 1)
        hc_close(cache)
        XCTAssertEqual(open.closings.load(ordering: .relaxed), 1)
        XCTAssertTrue(open.engineWasRunning.load(ordering: .relaxed), "told while the engine still ran")
        XCTAssertEqual(removed.closings.load(ordering: .relaxed), 0)
        XCTAssertFalse(dependents.add(FakeDependent(cache: handle)), "no new member once closing")
        XCTAssertEqual(dependents.count, 0)
    }

    func testLogCallbackGetsTheBusyReason() throws {
        let folder = newFolder()
        let options = config(folder: folder)
        defer { hc_config_free(options) }
        let (result, cache) = open(options)
        XCTAssertEqual(result, 0)
        defer { hc_close(cache) }

        let seen = Box()
        let callback: HCLogFunction = { userdata, level, message in
            let box = Unmanaged<Box>.fromOpaque(userdata!).takeUnretainedValue()
            box.entries.withLock { $0.append("\(level) \(String(cString: message!))") }
        }
        hc_config_set_log(options, 0, callback, Unmanaged.passUnretained(seen).toOpaque())
        XCTAssertEqual(open(options).0, -4)
        let lines = seen.entries.withLock { $0 }
        XCTAssertTrue(lines.contains { $0.hasPrefix("4 hc_open: ") && $0.contains("already open in this process") },
                      "\(lines)")
    }

    /// Each cache logs to its own callback: B's failure to bind reaches B's
    /// callback only (and is HC_EIO).
    func testEachCacheHasItsOwnLogCallback() throws {
        let logA = Box(), logB = Box()
        let callback: HCLogFunction = { userdata, level, message in
            let box = Unmanaged<Box>.fromOpaque(userdata!).takeUnretainedValue()
            box.entries.withLock { $0.append("\(level) \(String(cString: message!))") }
        }
        let optionsA = config(folder: newFolder())
        defer { hc_config_free(optionsA) }
        hc_config_set_log(optionsA, 4, callback, Unmanaged.passUnretained(logA).toOpaque())
        let (resultA, cacheA) = open(optionsA)
        XCTAssertEqual(resultA, 0)
        defer { hc_close(cacheA) }
        XCTAssertEqual(hc_serve(cacheA), 0)
        let port = hc_port(cacheA)

        let optionsB = config(folder: newFolder(), [("port", String(port))])
        defer { hc_config_free(optionsB) }
        hc_config_set_log(optionsB, 4, callback, Unmanaged.passUnretained(logB).toOpaque())
        let (resultB, cacheB) = open(optionsB)
        XCTAssertEqual(resultB, 0)
        defer { hc_close(cacheB) }
        XCTAssertEqual(hc_serve(cacheB), -14, "HC_EADDRINUSE: the port is taken")
        XCTAssertEqual(hc_port(cacheB), -1)
        let linesB = logB.entries.withLock { $0 }
        XCTAssertTrue(linesB.contains { $0.hasPrefix("4 hc_serve: cannot listen on 127.0.0.1:\(port)") }, "\(linesB)")
        XCTAssertEqual(logA.entries.withLock { $0 }, [], "A's callback heard nothing of B")
    }

    func testLevelsMapInOrder() {
        XCTAssertEqual(LogTarget.swiftLevel(0), .trace)
        XCTAssertEqual(LogTarget.swiftLevel(4), .warning)
        XCTAssertEqual(LogTarget.swiftLevel(6), .critical)
        XCTAssertEqual(LogTarget.swiftLevel(99), .critical)
        XCTAssertEqual(LogTarget.cLevel(.notice), 3)
        XCTAssertEqual(LogTarget.cLevel(.error), 5)
    }

    func testStrerrorUsesTheOneTable() {
        XCTAssertEqual(String(cString: hc_strerror(0)), "success")
        XCTAssertEqual(String(cString: hc_strerror(-4)), "cache folder in use")
        XCTAssertEqual(String(cString: hc_strerror(-12)), "wrong or missing encryption key for the cache folder")
        XCTAssertEqual(String(cString: hc_strerror(-13)), "does not fit in the cache limit")
        XCTAssertEqual(String(cString: hc_strerror(-14)), "address already in use")
        XCTAssertEqual(String(cString: hc_strerror(-15)), "unknown error")
        XCTAssertEqual(hc_strerror(-4), hc_strerror(-4), "a static string")
    }
}

/// The C string at the start of `buffer`.
private func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

private final class Box: Sendable {
    let entries = Locked<[String]>([])
}

private final class FakeDependent: CacheDependent {
    let cache: CacheHandle
    let closings = Atomic<Int>(0)
    let engineWasRunning = Atomic<Bool>(false)

    init(cache: CacheHandle) { self.cache = cache }

    func cacheClosing() {
        closings.add(1, ordering: .relaxed)
        // Not closed yet (a closed cache says .closed): a reader could still
        // post its cancellation to the loop.
        var open = false
        do { _ = try cache.cache.proxyURL(for: "http://example.com/a.mp4") } catch { open = error.code != .closed }
        engineWasRunning.store(open, ordering: .relaxed)
        cache.dependents.remove(self)
    }
}
