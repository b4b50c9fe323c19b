import Foundation
@testable import HTTPCache
import XCTest

/// Preloading: the CLI with and without a running proxy, then playing
/// offline; ranges, durations and pins through the Swift API.
final class PreloadTests: XCTestCase {
    func testPreloadCommandMakesPresentationsPlayOfflineWithAndWithoutAProxy() throws {
        let fixture = try HLSFixture()
        let directory = try TemporaryDirectory(prefix: "preload-cli")
        defer { directory.remove() }
        let references = try [fixture.master, fixture.aes].map(HLSFixture.frameMD5)

        // No proxy serves the folder: the command does the preload itself.
        let offlineFolder = directory.file("cache-a").path
        let local = try TestTools.run(CLITests.binary, ["preload", fixture.master, fixture.aes, "--cache-dir", offlineFolder],
                                      timeout: 120)
        XCTAssertTrue(local.succeeded, local.stderr)
        let summary = local.stdout.split(separator: "\n")
        XCTAssertEqual(summary.count, 2, local.stdout)
        XCTAssertTrue(summary[0].hasPrefix("\(fixture.master): done"), local.stdout)
        // Both variants: 2 variant playlists, 3 segments each, plus the master.
        XCTAssertTrue(summary[0].contains("6/6 segments"), local.stdout)
        XCTAssertTrue(summary[1].hasPrefix("\(fixture.aes): done"), local.stdout)

        // A proxy serves the folder: the command asks it (admin route).
        let servedFolder = directory.file("cache-b").path
        let proxy = try ProxyProcess(cacheDirectory: servedFolder)
        defer { proxy.terminate() }
        let remote = try TestTools.run(CLITests.binary, ["preload", fixture.master, fixture.aes, "--cache-dir", servedFolder],
                                       timeout: 120)
        XCTAssertTrue(remote.succeeded, remote.stderr)
        XCTAssertEqual(remote.stdout.split(separator: "\n").count, 2, remote.stdout)
        XCTAssertTrue(remote.stdout.contains("6/6 segments"), remote.stdout)

        // A failure: the reason and a non-zero exit status from HTTPCacheError.
        for folder in [servedFolder, directory.file("cache-c").path] {
            let failed = try TestTools.run(CLITests.binary, ["preload", fixture.origin.url("/hls/missing.m3u8"), "--cache-dir", folder],
                                           timeout: 60)
            XCTAssertEqual(failed.exitCode, HTTPCacheError(.notFound, "").exitStatus, failed.stderr)
            XCTAssertTrue(failed.stdout.contains("failed: ") && failed.stdout.contains("404"), failed.stdout)
        }

        fixture.origin.stop()
        // Offline: the running proxy plays both from its preloaded cache …
        for (url, reference) in zip([fixture.master, fixture.aes], references) {
            XCTAssertEqual(try HLSFixture.frameMD5(try proxy.proxyURL(url)), reference, "\(url) offline, preloaded by the proxy")
        }
        // … and so does a proxy started on the folder the command filled.
        var configuration = HTTPCacheConfiguration(cacheDirectory: offlineFolder)
        configuration.readTimeout = 5
        let cache = try MediaCache(configuration: configuration, logger: LogCapture().logger)
        defer { cache.close() }
        try cache.serve()
        for (url, reference) in zip([fixture.master, fixture.aes], references) {
            XCTAssertEqual(try HLSFixture.frameMD5(try cache.proxyURL(for: url)), reference, "\(url) offline, preloaded by the command")
        }

    }

    func testRangeDurationVariantAndProgress() throws {
        let fixture = try HLSFixture()
        let file = try TestFile.random(size: 200_000, seed: 3, in: fixture.root, name: "plain.bin")
        let directory = try TemporaryDirectory(prefix: "preload-api")
        defer { directory.remove() }
        let cache = try MediaCache(configuration: HTTPCacheConfiguration(cacheDirectory: directory.file("cache").path),
                                   logger: LogCapture().logger)
        defer { cache.close() }
        let plain = fixture.origin.url("/plain.bin")

        // --range caches exactly that range.
        let ranged = try cache.preload(plain, range: 1000...1999)
        let rangedResult = ranged.wait(timeout: 30)
        XCTAssertEqual(try rangedResult?.get().bytesDone, 1000)
        let entry = cache.cachedResources().first { $0.url == plain }
        XCTAssertEqual(entry?.cachedRanges, [1000...1999])
        XCTAssertEqual(entry?.totalLength, Int64(file.bytes.count))

        // --duration: the first 2 s of a 6 s presentation in 2 s segments is one segment.
        fixture.origin.clearAccessLog()
        let short = try cache.preload(fixture.fmp4, options: PreloadOptions(duration: 2))
        let updates = Locked<[PreloadProgress]>([])
        let collected = expectation(description: "progress stream ends")
        Task {
            for await progress in short.updates { updates.mutate { $0.append(progress) } }
            collected.fulfill()
        }
        let progress = try awaitValue(short)
        wait(for: [collected], timeout: 30)
        XCTAssertEqual(progress.segmentsDone, 1)
        XCTAssertEqual(progress.segmentsTotal, 1)
        XCTAssertEqual(updates.value.last, progress)
        XCTAssertFalse(updates.value.isEmpty)
        let fetched = fixture.origin.accessLog().map(\.uri)
        XCTAssertEqual(fetched.filter { $0.hasSuffix(".m4s") }, ["/hls/fmp4/seg0.m4s"], "\(fetched)")
        XCTAssertTrue(fetched.contains("/hls/fmp4/init.mp4"))

        // --variant lowest: only the 160x120 variant's segments.
        fixture.origin.clearAccessLog()
        let low = try cache.preload(fixture.master, options: PreloadOptions(variants: .lowest))
        XCTAssertEqual(try awaitValue(low).segmentsDone, 3)
        let lowFetched = fixture.origin.accessLog().map(\.uri)
        XCTAssertTrue(lowFetched.contains { $0.hasPrefix("/hls/v1/seg") })
        XCTAssertFalse(lowFetched.contains { $0.hasPrefix("/hls/v0/") }, "\(lowFetched)")

        // Preloading what is cached costs the origin nothing.
        fixture.origin.clearAccessLog()
        XCTAssertEqual(try awaitValue(try cache.preload(fixture.master, options: PreloadOptions(variants: .lowest))).segmentsDone, 3)
        XCTAssertEqual(fixture.origin.accessLog().count, 0)

        // Cancel.
        let canceled = try cache.preload(fixture.aes)
        canceled.cancel()
        if case .failure(let error)? = canceled.wait(timeout: 30) {
            XCTAssertEqual(error.code, .canceled)
        } else if canceled.result == nil {
            XCTFail("cancel did not end the preload")
        }
    }

    func testPinnedResourcesSurviveEvictionUntilUnpinned() throws {
        let fixture = try HLSFixture()
        var files: [TestFile] = []
        for i in 0..<3 { files.append(try TestFile.random(size: 700_000, seed: UInt64(10 + i), in: fixture.root, name: "big\(i).bin")) }
        let directory = try TemporaryDirectory(prefix: "preload-pin")
        defer { directory.remove() }
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("cache").path)
        configuration.maxCacheSize = 1_500_000
        let clock = TestClock()  // reads a second apart, without a sleep
        configuration.clock = { clock.now }
        let logs = LogCapture()
        let cache = try MediaCache(configuration: configuration, logger: logs.logger)
        defer { cache.close() }
        try cache.serve()

        let pinned = try awaitValue(try cache.preload(fixture.aes, options: PreloadOptions(pin: true)))
        XCTAssertGreaterThan(pinned.bytesDone, 0)
        let aesEntries = Set(cache.cachedResources().map(\.url))
        XCTAssertEqual(aesEntries.count, 1 + 1 + 3, "playlist, key, segments: \(aesEntries)")
        // Newer unpinned entries push the cache over its limit: the oldest
        // unpinned one goes, the older pinned ones stay.
        for file in files.prefix(2) {
            let url = fixture.origin.url("/" + file.url.lastPathComponent)
            let response = try RawHTTPClient.get(url: try cache.proxyURL(for: url), timeout: 20)
            XCTAssertBytes(response.body, equal: file)
            clock.advance(seconds: 1)
        }
        let first = fixture.origin.url("/big0.bin")
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { !cache.cachedResources().contains { $0.url == first } }, "unpinned LRU entry evicted")
        var urls = Set(cache.cachedResources().map(\.url))
        XCTAssertTrue(aesEntries.isSubset(of: urls), "pinned entries kept: \(urls)")
        XCTAssertTrue(cache.cachedResources().filter { aesEntries.contains($0.url) }.allSatisfy(\.isComplete))

        // Unpinned, they are the oldest: the next overflow takes them.
        XCTAssertEqual(cache.unpin(fixture.aes), aesEntries.count)
        let third = fixture.origin.url("/big2.bin")
        XCTAssertEqual(try RawHTTPClient.get(url: try cache.proxyURL(for: third), timeout: 20).status, 200)
        // Eviction frees until the total fits: the oldest (once pinned) go first, the newer stay.
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { !aesEntries.isSubset(of: Set(cache.cachedResources().map(\.url))) },
                      "unpinned entries evicted: \(Set(cache.cachedResources().map(\.url)))")
        urls = Set(cache.cachedResources().map(\.url))
        XCTAssertTrue(urls.contains(third))
        XCTAssertTrue(urls.contains(fixture.origin.url("/big1.bin")), "\(urls)")
        XCTAssertLessThanOrEqual(cache.cacheSize(), configuration.maxCacheSize)

        // Pins alone over the limit: kept, and the log says so.
        // (Each resource fits the limit: one larger than the whole limit is never kept.)
        let aesFiles = try FileManager.default.contentsOfDirectory(atPath: fixture.root.appendingPathComponent("hls/aes").path)
        let largest = try aesFiles.map { try Data(contentsOf: fixture.root.appendingPathComponent("hls/aes/" + $0)).count }.max() ?? 0
        var small = HTTPCacheConfiguration(cacheDirectory: directory.file("cache-small").path)
        small.maxCacheSize = Int64(largest + 1000)
        let smallLogs = LogCapture()
        let smallCache = try MediaCache(configuration: small, logger: smallLogs.logger)
        defer { smallCache.close() }
        _ = try awaitValue(try smallCache.preload(fixture.aes, options: PreloadOptions(pin: true)))
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { !smallLogs.lines(.warning, containing: "pinned resources alone exceed").isEmpty })
        XCTAssertEqual(smallCache.cachedResources().count, 5)

        // One resource larger than the whole limit is never kept, pinned or
        // not: the pinning preload fails for it instead of saying done.
        let tooBig = fixture.origin.url("/big0.bin")
        XCTAssertThrowsError(try awaitValue(try smallCache.preload(tooBig, options: PreloadOptions(pin: true)))) { error in
            XCTAssertEqual((error as? HTTPCacheError)?.code, .tooLarge, "\(error)")
            XCTAssertTrue((error as? HTTPCacheError)?.message.contains("never kept, pinned or not") == true, "\(error)")
        }
        XCTAssertFalse(smallCache.cachedResources().contains { $0.url == tooBig })
    }
}

extension XCTestCase {
    /// Waits (bounded) for a preload's end through its async API.
    func awaitValue(_ task: PreloadTask, timeout: TimeInterval = 60) throws -> PreloadProgress {
        let box = ResultBox()
        let done = expectation(description: "preload of \(task.url)")
        Task {
            do { box.set(.success(try await task.value())) } catch { box.set(.failure(error)) }
            done.fulfill()
        }
        wait(for: [done], timeout: timeout)
        guard let result = box.get() else { throw TestSupportError("preload did not end") }
        return try result.get()
    }
}

/// A result handed from a Task to the test thread.
final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Result<PreloadProgress, Error>?
    func set(_ v: Result<PreloadProgress, Error>) { lock.withLock { value = v } }
    func get() -> Result<PreloadProgress, Error>? { lock.withLock { value } }
}

/// A value shared between a Task and the test thread.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func mutate(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}

/// Preloads and players: one download for both, and players first.
final class PreloadPriorityTests: XCTestCase {
    func testPreloadAndPlayerShareOneFetchAndPlayersPreemptPreloads() throws {
        let directory = try TemporaryDirectory(prefix: "preload-share")
        defer { directory.remove() }
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let shared = try TestFile.random(size: 3_000_000, seed: 21, in: root, name: "shared.mp4")
        let later = try TestFile.random(size: 300_000, seed: 22, in: root, name: "later.mp4")
        // 2 MB/s per connection: a 3 MB body takes about 1.5 s, long enough to overlap.
        let origin = try NginxOrigin(root: root, extraServerConfig: "limit_rate 2m;")
        let logs = LogCapture()
        let cache = try MediaCache(configuration: HTTPCacheConfiguration(cacheDirectory: directory.file("cache").path),
                                   logger: logs.logger)
        defer { cache.close() }
        try cache.serve()

        // A preload runs; a player asks for the same bytes meanwhile.
        let preload = try cache.preload(origin.url("/shared.mp4"))
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) { preload.progress.bytesDone > 0 })
        let player = try RawHTTPClient.get(url: try cache.proxyURL(for: origin.url("/shared.mp4")), timeout: 30)
        XCTAssertBytes(player.body, equal: shared)
        guard case .success? = preload.wait(timeout: 30) else { return XCTFail("preload did not succeed: \(String(describing: preload.result))") }
        let sent = origin.accessLog().filter { $0.uri == "/shared.mp4" }.reduce(0) { $0 + $1.bodyBytes }
        XCTAssertEqual(sent, shared.size, "the origin sent the bytes once")

        // While a player's request is served, a new preload waits.
        let slow = try RawHTTPConnection(port: cache.port!, timeout: 30)
        defer { slow.close() }
        try cache.removeResource(for: origin.url("/shared.mp4"))
        let (_, _, path) = try RawHTTPClient.parse(url: try cache.proxyURL(for: origin.url("/shared.mp4")))
        try slow.sendRequest(path: path)
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) {
            cache.cachedResources().contains { $0.url.hasSuffix("/shared.mp4") && $0.isInUse }
        }, "the player's fetch runs")
        let waiting = try cache.preload(origin.url("/later.mp4"))
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) {
            !logs.lines(.debug, containing: "preload fetch waits for a slot").filter { $0.contains("/later.mp4") }.isEmpty
        }, "the preload's fetch queued")
        XCTAssertEqual(waiting.progress.bytesDone, 0, "no preload fetch while a player is served")
        XCTAssertFalse(origin.accessLog().contains { $0.uri == "/later.mp4" })
        let response = try slow.readResponse()
        XCTAssertBytes(response.body, equal: shared)
        slow.close()
        guard case .success(let done)? = waiting.wait(timeout: 30) else { return XCTFail("preload did not resume") }
        XCTAssertEqual(done.bytesDone, Int64(later.size))
    }

    /// The part done counts bytes once sizes are known (a one-resource
    /// fraction showed 10% of a preload whose one big file was 90% done).
    func testProgressFractionCountsBytesWhenSizesAreKnown() {
        XCTAssertEqual(PreloadProgress(bytesDone: 900, bytesTotal: 1000, resourcesDone: 1, resourcesTotal: 10).fractionDone, 0.9)
        XCTAssertEqual(PreloadProgress(bytesDone: 900, bytesTotal: nil, resourcesDone: 1, resourcesTotal: 4).fractionDone, 0.25)
        XCTAssertEqual(PreloadProgress().fractionDone, 0)
    }
}
