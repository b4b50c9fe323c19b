import Foundation
import HTTPCache
import XCTest

/// Reads a whole reader (to its end) with blocking reads.
func readAll(_ reader: CacheReader, chunk: Int = 100_000, timeout: Double = 30) throws -> [UInt8] {
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: chunk)
    while true {
        let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0, timeout: timeout) }
        if n == 0 { return out }
        out += buffer[0..<n]
    }
}

/// Reads exactly `count` bytes (fewer only at the end).
func readCount(_ reader: CacheReader, _ count: Int, timeout: Double = 30) throws -> [UInt8] {
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while out.count < count {
        let want = min(buffer.count, count - out.count)
        let n = try buffer.withUnsafeMutableBytes { try reader.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), timeout: timeout) }
        if n == 0 { break }
        out += buffer[0..<n]
    }
    return out
}

/// A cache (no server unless asked) with an nginx origin.
final class ReaderFixture {
    let directory: TemporaryDirectory
    let root: URL
    let origin: NginxOrigin
    let cacheDirectory: String
    var cache: MediaCache
    /// What the cache logs (debug and up), when made with `capturingLogs`; else it logs to stderr.
    let logs = LogCapture()

    init(extraServerConfig: String = "", capturingLogs: Bool = false,
         configure: (inout HTTPCacheConfiguration) -> Void = { _ in }) throws {
        directory = try TemporaryDirectory(prefix: "httpcache-reader")
        root = directory.url.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        cacheDirectory = directory.url.appendingPathComponent("cache").path
        origin = try NginxOrigin(root: root, extraServerConfig: extraServerConfig)
        var configuration = HTTPCacheConfiguration(cacheDirectory: cacheDirectory)
        configure(&configuration)
        cache = try capturingLogs ? MediaCache(configuration: configuration, logger: logs.logger)
            : MediaCache(configuration: configuration)
    }

    deinit { cache.close() }

    func file(_ name: String, size: Int, seed: UInt64 = 7) throws -> TestFile {
        try TestFile.random(size: size, seed: seed, in: root, name: name)
    }

    func read(_ name: String, offset: Int64 = 0, length: Int64? = nil) throws -> [UInt8] {
        let reader = try cache.openReader(url: origin.url("/" + name), offset: offset, length: length)
        defer { reader.close() }
        return try readAll(reader)
    }
}

final class ReaderTests: XCTestCase {
    func testWholeAndRandomRangesColdPartialAndWarm() throws {
        let fixture = try ReaderFixture()
        let file = try fixture.file("movie.bin", size: 3_000_017)
        var generator = SplitMix(seed: 42)
        // Cold, then more and more partially cached: 200 ranges as they come.
        for i in 0..<200 {
            let offset = Int64(generator.next() % UInt64(file.size))
            let length = i % 10 == 0 ? nil : Int64(generator.next() % 70_000)
            let got = try fixture.read(file.name, offset: offset, length: length)
            let end = length.map { min(Int(offset + $0), file.size) } ?? file.size
            XCTAssertEqual(got, Array(file.bytes[Int(offset)..<end]), "range \(offset) +\(length ?? -1)")
        }
        XCTAssertEqual(try fixture.read(file.name), file.bytes, "whole, partially cached")
        // Warm: everything is cached now, so the origin is not needed.
        fixture.origin.stop()
        for _ in 0..<200 {
            let offset = Int64(generator.next() % UInt64(file.size))
            let length = Int64(generator.next() % 200_000)
            let got = try fixture.read(file.name, offset: offset, length: length)
            XCTAssertEqual(got, Array(file.bytes[Int(offset)..<min(Int(offset + length), file.size)]))
        }
        XCTAssertEqual(try fixture.read(file.name), file.bytes, "whole, warm and offline")
    }

    func testColdWholeReadAndInfo() throws {
        let fixture = try ReaderFixture()
        let file = try fixture.file("a.mp4", size: 2_500_000)
        let reader = try fixture.cache.openReader(url: fixture.origin.url("/a.mp4"))
        let info = try reader.info(timeout: 10)
        XCTAssertEqual(info.totalLength, 2_500_000)
        XCTAssertEqual(info.contentType, "video/mp4")
        XCTAssertEqual(info.acceptsRanges, true)
        XCTAssertNotNil(info.etag)
        XCTAssertNotNil(info.lastModified)
        XCTAssertEqual(info.range, 0..<2_500_000)
        XCTAssertEqual(try readAll(reader), file.bytes)
        var buffer = [UInt8](repeating: 0, count: 10)
        XCTAssertEqual(try buffer.withUnsafeMutableBytes { try reader.read(into: $0, timeout: 1) }, 0, "0 at the end, again")
        reader.close()
    }

    func testPlayerSeekPattern() throws {
        let fixture = try ReaderFixture()
        let file = try fixture.file("seek.bin", size: 4_000_000)
        let reader = try fixture.cache.openReader(url: fixture.origin.url("/seek.bin"))
        defer { reader.close() }
        XCTAssertEqual(try readCount(reader, 100_000), Array(file.bytes[0..<100_000]), "start")
        // A player looks at the end (the moov atom), then goes back to the middle.
        try reader.seek(to: 3_900_000)
        XCTAssertEqual(reader.position, 3_900_000)
        XCTAssertEqual(try readAll(reader), Array(file.bytes[3_900_000...]), "end")
        try reader.seek(to: 2_000_001)
        XCTAssertEqual(try readCount(reader, 300_000), Array(file.bytes[2_000_001..<2_300_001]), "middle")
        try reader.seek(to: 50_000)
        XCTAssertEqual(try readCount(reader, 100_000), Array(file.bytes[50_000..<150_000]), "back, partly cached")
        try reader.seek(to: 4_000_000)
        var buffer = [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(try buffer.withUnsafeMutableBytes { try reader.read(into: $0, timeout: 5) }, 0, "seek to the end: 0")
        XCTAssertThrowsError(try reader.seek(to: 4_000_001)) { XCTAssertEqual(($0 as? HTTPCacheError)?.code, .range) }
        try reader.seek(to: 10)
        XCTAssertEqual(try readCount(reader, 10), Array(file.bytes[10..<20]), "usable after a refused seek")
        // Cached runs come from disk: re-reading what was read asks the origin
        // nothing. (Bounded readers: an open one reads ahead into uncached bytes.)
        reader.close()
        // Its download ended, nginx has logged it.
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) {
            fixture.cache.cachedResources().first { $0.url.hasSuffix("/seek.bin") }?.isInUse == false
        })
        let before = fixture.origin.settledAccessLog().filter { $0.uri == "/seek.bin" }.count
        XCTAssertGreaterThan(before, 0)
        for (offset, count) in [(3_900_000, 100_000), (2_000_001, 300_000), (0, 150_000)] {
            XCTAssertEqual(try fixture.read("seek.bin", offset: Int64(offset), length: Int64(count)),
                           Array(file.bytes[offset..<(offset + count)]))
        }
        XCTAssertEqual(fixture.origin.settledAccessLog().filter { $0.uri == "/seek.bin" }.count, before,
                       "no origin request for cached bytes")
    }

    func testRangeReaderAndItsLimits() throws {
        let fixture = try ReaderFixture()
        let file = try fixture.file("r.bin", size: 1_000_000)
        let reader = try fixture.cache.openReader(url: fixture.origin.url("/r.bin"), offset: 1000, length: 5000)
        XCTAssertEqual(try reader.info(timeout: 10).range, 1000..<6000)
        XCTAssertEqual(try readAll(reader), Array(file.bytes[1000..<6000]))
        XCTAssertThrowsError(try reader.seek(to: 999)) { XCTAssertEqual(($0 as? HTTPCacheError)?.code, .range) }
        XCTAssertThrowsError(try reader.seek(to: 6001)) { XCTAssertEqual(($0 as? HTTPCacheError)?.code, .range) }
        try reader.seek(to: 5990)
        XCTAssertEqual(try readAll(reader), Array(file.bytes[5990..<6000]))
        reader.close()
        XCTAssertThrowsError(try reader.info(timeout: 1)) { XCTAssertEqual(($0 as? HTTPCacheError)?.code, .closed) }

        let past = try fixture.cache.openReader(url: fixture.origin.url("/r.bin"), offset: 2_000_000)
        var buffer = [UInt8](repeating: 0, count: 16)
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try past.read(into: $0, timeout: 10) }) {
            XCTAssertEqual(($0 as? HTTPCacheError)?.code, .range)
        }
        past.close()
    }

    func testErrorsAreTyped() throws {
        let fixture = try ReaderFixture()
        XCTAssertThrowsError(try fixture.cache.openReader(url: "ftp://example.com/a")) {
            XCTAssertEqual(($0 as? HTTPCacheError)?.code, .invalidArgument)
        }
        let missing = try fixture.cache.openReader(url: fixture.origin.url("/missing.bin"))
        XCTAssertThrowsError(try missing.info(timeout: 10)) { error in
            XCTAssertEqual((error as? HTTPCacheError)?.code, .notFound)
            XCTAssertTrue("\(error)".contains("404"), "\(error)")
        }
        missing.close()
        fixture.origin.stop()
        let down = try fixture.cache.openReader(url: fixture.origin.url("/x.bin"))
        XCTAssertThrowsError(try down.info(timeout: 10)) { XCTAssertEqual(($0 as? HTTPCacheError)?.code, .upstream) }
        down.close()
    }

    func testTLSAndTimeoutFailuresKeepTheirCodes() throws {
        // An https origin whose self-signed certificate nobody trusts.
        let directory = try TemporaryDirectory(prefix: "httpcache-reader")
        let root = directory.url.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        _ = try TestFile.random(size: 1000, in: root, name: "s.bin")
        let tls = try TLSConfig.selfSigned(in: directory.url)
        let secure = try NginxOrigin(root: root, tls: tls)
        let stalled = try FaultyOrigin()
        defer { stalled.stop() }
        stalled.serve("/slow.bin", body: [1, 2, 3], fault: .stallBeforeHead)
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.path + "/cache")
        configuration.readTimeout = 0.5
        let cache = try MediaCache(configuration: configuration)
        defer { cache.close() }

        let refused = try cache.openReader(url: secure.url("/s.bin"))
        XCTAssertThrowsError(try refused.info(timeout: 10)) { error in
            XCTAssertEqual((error as? HTTPCacheError)?.code, .tls)
            XCTAssertTrue("\(error)".contains("certificate"), "\(error)")
        }
        refused.close()
        let slow = try cache.openReader(url: stalled.url("/slow.bin"))
        var buffer = [UInt8](repeating: 0, count: 10)
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try slow.read(into: $0, timeout: 10) }) {
            XCTAssertEqual(($0 as? HTTPCacheError)?.code, .timedOut, "the origin's timeout, not the read's")
        }
        slow.close()
    }

    func testAsyncReads() throws {
        // Driven from a Task, so the fixture's nginx stops outside async
        // context (Process waits on the main run loop there).
        let fixture = try ReaderFixture()
        let file = try fixture.file("async.bin", size: 1_500_000)
        let reader = try fixture.cache.openReader(url: fixture.origin.url("/async.bin"))
        let result = LockedValue<(Int64?, [UInt8])?>(nil)
        let done = expectation(description: "async reads")
        Task {
            var got: [UInt8] = []
            let info = try await reader.info()
            while true {
                let bytes = try await reader.read(upTo: 100_000)
                if bytes.isEmpty { break }
                got += bytes
            }
            result.withLock { $0 = (info.totalLength, got) }
            done.fulfill()
        }
        wait(for: [done], timeout: 30)
        XCTAssertEqual(result.withLock { $0?.0 }, 1_500_000)
        XCTAssertEqual(result.withLock { $0?.1 }, file.bytes)
        reader.close()
    }

    func testAsyncReadEndsWhenItsTaskIsCancelled() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        origin.serve("/stall.bin", body: TestFile.randomBytes(count: 50_000, seed: 5), fault: .stallMidBody(after: 100))
        let directory = try TemporaryDirectory(prefix: "httpcache-reader")
        let cache = try MediaCache(configuration: HTTPCacheConfiguration(cacheDirectory: directory.path + "/cache"))
        defer { cache.close() }
        let reader = try cache.openReader(url: origin.url("/stall.bin"))
        XCTAssertEqual(try readCount(reader, 100, timeout: 10).count, 100)
        let outcome = LockedValue<HTTPCacheError.Code?>(nil)
        let done = expectation(description: "canceled read")
        let task = Task {
            do { _ = try await reader.read(upTo: 1000) } catch { outcome.withLock { $0 = (error as? HTTPCacheError)?.code } }
            done.fulfill()
        }
        Thread.sleep(forTimeInterval: 0.2)
        task.cancel()
        wait(for: [done], timeout: 5)
        XCTAssertEqual(outcome.withLock { $0 }, .canceled)
        // Only that read ended: the reader still works (and times out, the origin being stalled).
        var buffer = [UInt8](repeating: 0, count: 10)
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try reader.read(into: $0, timeout: 0.1) }) {
            XCTAssertEqual(($0 as? HTTPCacheError)?.code, .timedOut)
        }
        reader.close()
    }

    func testCancelFromAnotherThreadEndsABlockedReadAtOnce() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        let body = TestFile.randomBytes(count: 200_000, seed: 3)
        origin.serve("/drip.bin", body: body, fault: .stallMidBody(after: 10_000))
        let directory = try TemporaryDirectory(prefix: "httpcache-reader")
        let cache = try MediaCache(configuration: HTTPCacheConfiguration(cacheDirectory: directory.path + "/cache"))
        defer { cache.close() }
        let reader = try cache.openReader(url: origin.url("/drip.bin"))
        XCTAssertEqual(try readCount(reader, 10_000, timeout: 10), Array(body[0..<10_000]))

        // Blocked: the origin sends nothing more. A timeout leaves the reader usable.
        var buffer = [UInt8](repeating: 0, count: 1000)
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try reader.read(into: $0, timeout: 0.2) }) {
            XCTAssertEqual(($0 as? HTTPCacheError)?.code, .timedOut)
        }
        let canceledAt = LockedValue<UInt64>(0)
        let thread = Thread {
            Thread.sleep(forTimeInterval: 0.3)
            canceledAt.withLock { $0 = DispatchTime.now().uptimeNanoseconds }
            reader.cancel()
        }
        thread.start()
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try reader.read(into: $0, timeout: 30) }) {
            XCTAssertEqual(($0 as? HTTPCacheError)?.code, .canceled)
        }
        let returned = DispatchTime.now().uptimeNanoseconds
        let latency = Double(returned - canceledAt.withLock { $0 }) / 1e6
        XCTAssertLessThan(latency, 100, "a blocked read returned \(latency) ms after cancel")
        print("cancel → blocked read returned in \(String(format: "%.3f", latency)) ms")
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try reader.read(into: $0, timeout: 1) }) {
            XCTAssertEqual(($0 as? HTTPCacheError)?.code, .canceled, "sticky")
        }
        XCTAssertThrowsError(try reader.seek(to: 0)) { XCTAssertEqual(($0 as? HTTPCacheError)?.code, .canceled) }
    }

    func testUnknownLengthIsLearnedAtTheEnd() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        let body = TestFile.randomBytes(count: 300_000, seed: 9)
        // The pause keeps the end (and so the length) unknown while info is asked.
        origin.serve("/live.bin", body: body, fault: .chunked(piece: 7000, pause: 0.3))
        let directory = try TemporaryDirectory(prefix: "httpcache-reader")
        let cache = try MediaCache(configuration: HTTPCacheConfiguration(cacheDirectory: directory.path + "/cache"))
        defer { cache.close() }
        let reader = try cache.openReader(url: origin.url("/live.bin"))
        let info = try reader.info(timeout: 10)
        XCTAssertNil(info.totalLength, "chunked: unknown until it ends")
        XCTAssertEqual(info.acceptsRanges, false, "the origin answered the Range with 200")
        XCTAssertEqual(info.range.upperBound, Int64.max)
        XCTAssertEqual(try readAll(reader), body)
        XCTAssertEqual(try reader.info(timeout: 1).totalLength, 300_000)
        reader.close()
        // Now cached with its length: a range reader is served from disk.
        let again = try cache.openReader(url: origin.url("/live.bin"), offset: 1000, length: 50)
        XCTAssertEqual(try again.info(timeout: 10).totalLength, 300_000)
        XCTAssertEqual(try readAll(again), Array(body[1000..<1050]))
        again.close()
    }

    func testAnOpenReaderKeepsItsResourceAndAClosedOneLetsItBeEvicted() throws {
        let fixture = try ReaderFixture { $0.maxCacheSize = 1_000_000 }
        let a = try fixture.file("a.bin", size: 700_000, seed: 1)
        let b = try fixture.file("b.bin", size: 700_000, seed: 2)
        let c = try fixture.file("c.bin", size: 700_000, seed: 3)
        let cached = { Set(fixture.cache.cachedResources().map { URL(string: $0.url)!.lastPathComponent }) }
        let reader = try fixture.cache.openReader(url: fixture.origin.url("/a.bin"))
        XCTAssertEqual(try readAll(reader), a.bytes)
        XCTAssertEqual(try fixture.read("b.bin"), b.bytes)
        // Over the limit: the least recently used entry not in use goes, never a.bin.
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { cached() == ["a.bin"] }, "\(cached())")
        reader.close()
        XCTAssertEqual(try fixture.read("c.bin"), c.bytes)
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { cached() == ["c.bin"] }, "a.bin evictable once closed: \(cached())")
    }

    func testClosingTheCacheClosesBlockedReaders() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        origin.serve("/stall.bin", body: TestFile.randomBytes(count: 50_000, seed: 5), fault: .stallMidBody(after: 100))
        let directory = try TemporaryDirectory(prefix: "httpcache-reader")
        let cache = try MediaCache(configuration: HTTPCacheConfiguration(cacheDirectory: directory.path + "/cache"))
        let reader = try cache.openReader(url: origin.url("/stall.bin"))
        XCTAssertEqual(try readCount(reader, 100, timeout: 10).count, 100)
        let thread = Thread {
            Thread.sleep(forTimeInterval: 0.2)
            cache.close()
        }
        thread.start()
        var buffer = [UInt8](repeating: 0, count: 1000)
        XCTAssertThrowsError(try buffer.withUnsafeMutableBytes { try reader.read(into: $0, timeout: 30) }) {
            XCTAssertEqual(($0 as? HTTPCacheError)?.code, .closed)
        }
        XCTAssertThrowsError(try cache.openReader(url: origin.url("/stall.bin"))) {
            XCTAssertEqual(($0 as? HTTPCacheError)?.code, .closed)
        }
    }

    func testReaderAndProxyShareOneOriginDownload() throws {
        // A slow origin, so the reader and the proxy client overlap.
        let fixture = try ReaderFixture(extraServerConfig: "limit_rate 2m;")
        let file = try fixture.file("shared.mp4", size: 3_000_000)
        try fixture.cache.serve()
        let proxyURL = try fixture.cache.proxyURL(for: fixture.origin.url("/shared.mp4"))
        let reader = try fixture.cache.openReader(url: fixture.origin.url("/shared.mp4"))
        XCTAssertEqual(try readCount(reader, 1000), Array(file.bytes[0..<1000]))
        let proxied = LockedValue<RawResponse?>(nil)
        let thread = Thread {
            let response = try? RawHTTPClient.get(url: proxyURL, timeout: 60)
            proxied.withLock { $0 = response }
        }
        thread.start()
        XCTAssertEqual(try readAll(reader), Array(file.bytes[1000...]))
        reader.close()
        XCTAssertTrue(TestTools.waitUntil(timeout: 30) { proxied.withLock { $0 != nil } })
        XCTAssertEqual(proxied.withLock { $0?.body }, file.bytes)
        let requests = fixture.origin.accessLog().filter { $0.uri == "/shared.mp4" }
        XCTAssertEqual(requests.count, 1, "one origin download: \(requests)")
    }
}

/// A value shared between test threads.
final class LockedValue<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    func withLock<R>(_ body: (inout T) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
