import Foundation
import Glibc
import HTTPCache
import XCTest

/// Issue #21 (and the playlist part of #27): transformed bodies go through
/// the bounded pipeline; a client that does not read holds a window, a huge
/// playlist never holds the loop, and LAN-mode playlists name signed URLs.
final class TransformedBodyTests: XCTestCase {
    /// Writes `size` bytes from `seed` to `url` a megabyte at a time (never the whole file in memory).
    private func writeLarge(_ url: URL, size: Int, seed: UInt64) throws {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o644])
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var written = 0
        var round: UInt64 = 0
        while written < size {
            let count = min(1 << 20, size - written)
            try handle.write(contentsOf: TestFile.randomBytes(count: count, seed: seed &+ round))
            written += count
            round += 1
        }
    }

    /// Reads `count` body bytes from `connection` and compares them, a megabyte at a time, with `file`.
    private func assertBody(_ connection: RawHTTPConnection, count: Int, equals file: URL,
                            file path: StaticString = #filePath, line: UInt = #line) throws {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var offset = 0
        while offset < count {
            let take = min(1 << 20, count - offset)
            let got = try connection.readRawBytes(take)
            let expected = [UInt8](try handle.read(upToCount: take) ?? Data())
            guard got == expected else {
                return XCTFail("body differs in the megabyte at \(offset)", file: path, line: line)
            }
            offset += take
        }
    }

    private static func residentBytes(of pid: Int32 = getpid()) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    /// A slow client of a large decrypted file: the proxy reads, decrypts
    /// and queues only while the socket's queue has room, so its memory
    /// stays bounded; reading on then gives every byte, exact.
    func testAClientThatDoesNotReadADecryptedFileHoldsBoundedMemory() throws {
        let size = 256 << 20
        let fixture = try ReaderFixture(capturingLogs: true) { $0.decryption = DecryptionTests.provider }
        let plain = fixture.root.appendingPathComponent("large.bin")
        try writeLarge(plain, size: size, seed: 5)
        try DecryptionTests.encrypt(plain, to: fixture.root.appendingPathComponent("large.ctr"), ecb: false)
        try fixture.cache.serve()
        let url = try fixture.cache.proxyURL(for: fixture.origin.url("/large.ctr"))
        let path = try RawHTTPClient.parse(url: url).path
        let port = fixture.cache.port!
        // Cold: through a download, every byte right.
        let first = try RawHTTPConnection(port: port, totalTimeout: 300)
        try first.sendRequest(path: path)
        XCTAssertEqual(try first.readResponseHead().contentLength, size)
        try assertBody(first, count: size, equals: plain)
        first.close()

        // Warm: the whole file is one cached run. A client that sends the request and does not read.
        let baseline = Self.residentBytes()
        let pauses = { fixture.logs.lines(.debug, containing: "body paused: the client reads slower").count }
        let pausedBefore = pauses()  // the cold client's, if it lagged
        let stalled = try RawHTTPConnection(port: port, totalTimeout: 300)
        try stalled.sendRequest(path: path)
        // The body stops once the socket holds its most: the memory then stays where it is.
        var peak = baseline
        let paused = TestTools.waitUntil(timeout: 30, pollInterval: 0.1) {
            peak = max(peak, Self.residentBytes())
            return pauses() > pausedBefore
        }
        XCTAssertTrue(paused, "the proxy stops reading the decrypted file for a client that does not read")
        peak = max(peak, Self.residentBytes())
        Sanitizer.assertGrowth(peak - baseline, below: 64 << 20,
                               "a stalled client of a \(size >> 20) MiB decrypted file grew the proxy by \((peak - baseline) >> 20) MiB")
        XCTAssertEqual(try stalled.readResponseHead().contentLength, size)
        try assertBody(stalled, count: size, equals: plain)
    }

    /// A playlist over the rewrite cap passes through unrewritten and
    /// zero-copy: /ping on the same loop stays quick and the proxy's memory
    /// does not follow the playlist's size. One under the cap is still rewritten.
    func testAHugePlaylistPassesUnrewrittenWithoutHoldingTheLoop() throws {
        let directory = try TemporaryDirectory(prefix: "huge-playlist")
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let huge = root.appendingPathComponent("huge.m3u8")
        try writePlaylist(huge, size: 100 << 20)
        let small = root.appendingPathComponent("small.m3u8")
        try writePlaylist(small, size: 2 << 20)
        let origin = try NginxOrigin(root: root)
        defer { origin.stop() }
        // One loop: /ping is answered by the loop that serves the playlist.
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path, extraArguments: ["--loops", "1"])
        defer { proxy.terminate() }
        let baseline = proxy.residentBytes

        let size = Int(try FileManager.default.attributesOfItem(atPath: huge.path)[.size] as? Int ?? 0)
        let path = try RawHTTPClient.parse(url: try proxy.proxyURL(origin.url("/huge.m3u8"))).path
        let port = proxy.port
        let done = DispatchSemaphore(value: 0)
        let failure = FailureNote()
        Thread.detachNewThread {
            defer { done.signal() }
            do {
                let client = try RawHTTPConnection(port: port, totalTimeout: 120)
                try client.sendRequest(path: path)
                let head = try client.readResponseHead()
                guard head.status == 200, head.contentLength == size else {
                    return failure.set("status \(head.status), length \(head.contentLength ?? -1) of \(size)")
                }
                // Slowly at first: the response stays in flight while /ping is measured.
                for _ in 0..<20 {
                    _ = try client.readRawBytes(64 << 10)
                    Thread.sleep(forTimeInterval: 0.05)
                }
                _ = try client.readRawBytes(size - 20 * (64 << 10))
            } catch {
                failure.set("\(error)")
            }
        }
        var slowest = 0.0
        var peak = baseline
        while done.wait(timeout: .now() + .milliseconds(50)) == .timedOut {
            let started = Date()
            XCTAssertEqual(try RawHTTPClient.get(url: "http://127.0.0.1:\(proxy.port)/ping", timeout: 10).status, 200)
            slowest = max(slowest, Date().timeIntervalSince(started))
            peak = max(peak, proxy.residentBytes)
        }
        XCTAssertNil(failure.text)
        XCTAssertLessThan(slowest, 0.5, "/ping while a 100 MiB playlist is served")
        Sanitizer.assertGrowth(peak - baseline, below: 48 << 20, "serving a 100 MiB playlist grew the proxy by \((peak - baseline) >> 20) MiB")
        // The whole body, as the origin has it (not rewritten: over the cap).
        let again = try RawHTTPConnection(port: proxy.port, totalTimeout: 120)
        try again.sendRequest(path: path)
        XCTAssertEqual(try again.readResponseHead().contentLength, size)
        try assertBody(again, count: size, equals: huge)

        let rewritten = try RawHTTPClient.get(url: try proxy.proxyURL(origin.url("/small.m3u8")), timeout: 30)
        XCTAssertEqual(rewritten.status, 200)
        XCTAssertTrue(rewritten.bodyString.contains("http://127.0.0.1:\(proxy.port)/p/"), "under the cap: rewritten")
        XCTAssertEqual(rewritten.bodyString.components(separatedBy: "/p/").count - 1,
                       rewritten.bodyString.components(separatedBy: "#EXTINF").count - 1, "every segment URI")
    }

    /// A playlist of unknown length (chunked at the origin) is found over
    /// the cap while it is read: what was read and the rest go out as the
    /// origin sent them. A small one is rewritten.
    func testAChunkedPlaylistOverTheCapPassesUnrewritten() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        func playlist(_ segments: Int) -> [UInt8] {
            Array(("#EXTM3U\n#EXT-X-TARGETDURATION:2\n" + (0..<segments).map { "#EXTINF:2.0,\nseg\($0).ts\n" }.joined()
                   + "#EXT-X-ENDLIST\n").utf8)
        }
        let large = playlist(800_000)
        XCTAssertGreaterThan(large.count, 16 << 20)
        origin.serve("/large.m3u8", body: large, fault: .chunked(piece: 64 << 10))
        let small = playlist(100)
        origin.serve("/small.m3u8", body: small, fault: .chunked(piece: 1000))
        let proxy = try TestProxy()
        let passed = try proxy.get(origin.url("/large.m3u8"))
        XCTAssertEqual(passed.status, 200)
        XCTAssertTrue(passed.body == large, "over the cap: the origin's bytes, \(passed.body.count) of \(large.count)")
        let rewritten = try proxy.get(origin.url("/small.m3u8"))
        XCTAssertEqual(rewritten.status, 200)
        XCTAssertEqual(rewritten.bodyString.components(separatedBy: "/p/").count - 1, 100, "under the cap: every segment rewritten")
    }

    /// A rewritten playlist goes out in pieces as the socket drains; the
    /// last of them, queued from the drain callback, must not be taken for
    /// the drain (with several loops, a keep-alive connection then went
    /// home with bytes still queued and was closed mid-body).
    func testRewrittenPlaylistsArriveWholeOnKeepAliveConnectionsOfSeveralLoops() throws {
        let directory = try TemporaryDirectory(prefix: "playlist-loops")
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        for n in 0..<8 { try writePlaylist(root.appendingPathComponent("p\(n).m3u8"), size: 2 << 20) }
        let origin = try NginxOrigin(root: root)
        defer { origin.stop() }
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path, extraArguments: ["--loops", "2"])
        defer { proxy.terminate() }
        for n in 0..<8 {
            for _ in 0..<50 { _ = try RawHTTPClient.get(url: "http://127.0.0.1:\(proxy.port)/ping", timeout: 10) }
            let url = try proxy.proxyURL(origin.url("/p\(n).m3u8"))
            for pass in ["cold", "warm"] {
                XCTAssertNoThrow(try {
                    let response = try RawHTTPClient.get(url: url, timeout: 30)
                    XCTAssertEqual(response.status, 200)
                    XCTAssertTrue(response.bodyString.hasSuffix("#EXT-X-ENDLIST\n"), "p\(n) \(pass)")
                }(), "p\(n).m3u8 \(pass)")
            }
        }
    }

    /// A media playlist of about `size` bytes with relative segment URIs.
    private func writePlaylist(_ url: URL, size: Int) throws {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o644])
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        try handle.write(contentsOf: Data("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n".utf8))
        var written = 0
        var index = 0
        while written < size {
            var block = ""
            for _ in 0..<10_000 {
                block += "#EXTINF:2.0,\nseg\(index).ts\n"
                index += 1
            }
            try handle.write(contentsOf: Data(block.utf8))
            written += block.utf8.count
        }
        try handle.write(contentsOf: Data("#EXT-X-ENDLIST\n".utf8))
    }

    /// LAN mode: every URI the proxy writes into a playlist is signed, so a
    /// player gets every segment (not 403) and plays frame-identical.
    func testLANModePlaylistsPlayThroughSignedURIs() throws {
        let fixture = try HLSFixture()
        let directory = try TemporaryDirectory(prefix: "hls-lan")
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("cache").path)
        configuration.host = "0.0.0.0"
        let cache = try MediaCache(configuration: configuration)
        defer { cache.close() }
        try cache.serve()
        let address = HardeningTests.nonLoopbackAddress() ?? "127.0.0.1"
        for url in [fixture.master, fixture.aes, fixture.fmp4] {
            let proxied = try cache.proxyURL(for: url).replacingOccurrences(of: "://0.0.0.0:", with: "://\(address):")
            let playlist = try RawHTTPClient.get(url: proxied, timeout: 20)
            XCTAssertEqual(playlist.status, 200, proxied)
            let uris = playlist.bodyString.split(separator: "\n").flatMap { $0.split(separator: "\"") }
                .filter { $0.hasPrefix("http://") }
            XCTAssertFalse(uris.isEmpty)
            for uri in uris {
                XCTAssertEqual(try RawHTTPClient.head(url: String(uri), timeout: 20).status, 200, "\(uri) in \(url)")
            }
            XCTAssertEqual(try HLSFixture.frameMD5(proxied), try HLSFixture.frameMD5(url), "\(url) through a LAN-mode proxy")
        }
    }
}

/// The first failure of a client thread, for the test's thread to check.
private final class FailureNote: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: String?
    func set(_ text: String) { lock.withLock { stored = stored ?? text } }
    var text: String? { lock.withLock { stored } }
}
