import Foundation
@testable import HTTPCache
import XCTest

/// HLS through the proxy: ffmpeg-made presentations on nginx, played by
/// ffmpeg through the proxy and compared frame by frame with the origin.
final class HLSProxyTests: XCTestCase {
    func openCache(_ directory: TemporaryDirectory, logs: LogCapture = LogCapture(),
                   _ configure: (inout HTTPCacheConfiguration) -> Void = { _ in }) throws -> MediaCache {
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("cache").path)
        configure(&configuration)
        let cache = try MediaCache(configuration: configuration, logger: logs.logger)
        try cache.serve()
        return cache
    }

    func testPresentationsPlayFrameIdenticalThroughTheProxyAndWithTheOriginStopped() throws {
        let fixture = try HLSFixture()
        let directory = try TemporaryDirectory(prefix: "hls-proxy")
        defer { directory.remove() }
        let cache = try openCache(directory)
        defer { cache.close() }
        var references: [String: [String]] = [:]
        for url in [fixture.master, fixture.aes, fixture.fmp4] {
            let reference = try HLSFixture.frameMD5(url)
            XCTAssertGreaterThan(reference.count, 150, "6 s of video and audio frames")
            references[url] = reference
            let proxied = try HLSFixture.frameMD5(try cache.proxyURL(for: url))
            XCTAssertEqual(proxied, reference, "\(url) through the proxy")
        }
        // Every request went through the proxy: the rewritten playlists name only proxy URLs.
        let master = try RawHTTPClient.get(url: try cache.proxyURL(for: fixture.master), timeout: 20)
        let text = String(decoding: master.body, as: UTF8.self)
        XCTAssertTrue(text.contains("http://127.0.0.1:\(cache.port!)/p/"), text)
        XCTAssertFalse(text.contains("\nv0/index.m3u8"), text)
        let aes = String(decoding: try RawHTTPClient.get(url: try cache.proxyURL(for: fixture.aes), timeout: 20).body, as: UTF8.self)
        XCTAssertTrue(aes.contains("URI=\"http://127.0.0.1:\(cache.port!)" + ProxyURLPath.of(fixture.keyURL) + "\""), aes)
        // The origin's playlist bytes are what the cache holds.
        let stored = cache.cachedResources().first { $0.url == fixture.aes }
        XCTAssertEqual(stored?.totalLength, Int64(try Data(contentsOf: fixture.file(for: fixture.aes)!).count))

        fixture.origin.stop()
        for url in [fixture.master, fixture.aes, fixture.fmp4] {
            XCTAssertEqual(try HLSFixture.frameMD5(try cache.proxyURL(for: url)), references[url], "\(url) offline")
        }
    }

    /// A playlist with every URI-bearing tag: every URI comes out as a proxy
    /// URL on the Host the client used, nothing else changes, and each URI
    /// serves the origin's bytes.
    func testEveryTagPointsAtTheProxyAndServesTheOriginBytes() throws {
        let directory = try TemporaryDirectory(prefix: "hls-tags")
        defer { directory.remove() }
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("p/sub"), withIntermediateDirectories: true)
        let origin = try NginxOrigin(root: root)
        let base = "http://127.0.0.1:\(origin.port)"
        let names = ["steer.json", "session.json", "sk.key", "audio.m3u8", "iframe.m3u8", "sub/var.m3u8", "k.key",
                     "init.mp4", "seg0.ts", "part0.ts", "hint.ts", "other.m3u8", "ad.m3u8", "ads.json", "abs.ts"]
        var files: [String: TestFile] = [:]
        for (i, name) in names.enumerated() {
            files[name] = try TestFile.random(size: 1000 + i * 37, seed: UInt64(i + 1),
                                             in: root.appendingPathComponent("p"), name: name)
        }
        let playlist = [
            "#EXTM3U",
            "#EXT-X-CONTENT-STEERING:SERVER-URI=\"steer.json?pathway=a\",PATHWAY-ID=\"a\"",
            "#EXT-X-SESSION-DATA:DATA-ID=\"x\",URI=\"session.json\"",
            "#EXT-X-SESSION-KEY:METHOD=AES-128,URI=\"sk.key\"",
            "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"en\",URI=\"audio.m3u8\"",
            "#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=1000,URI=\"\(base)/p/iframe.m3u8\"",
            "#EXT-X-STREAM-INF:BANDWIDTH=2000,AUDIO=\"a\"",
            "sub/var.m3u8?sig=1",
            "#EXT-X-KEY:METHOD=AES-128,URI=\"k.key\"",
            "#EXT-X-KEY:METHOD=SAMPLE-AES,KEYFORMAT=\"com.apple.streamingkeydelivery\",URI=\"skd://asset\"",
            "#EXT-X-MAP:URI=\"init.mp4\",BYTERANGE=\"500@0\"",
            "#EXTINF:2.0,",
            "seg0.ts",
            "#EXT-X-PART:DURATION=0.5,URI=\"part0.ts\"",
            "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"hint.ts\"",
            "#EXT-X-RENDITION-REPORT:URI=\"other.m3u8\",LAST-MSN=3",
            "#EXT-X-DATERANGE:ID=\"i\",START-DATE=\"2026-01-01T00:00:00Z\",X-ASSET-URI=\"ad.m3u8\",X-ASSET-LIST=\"ads.json\"",
            "#EXT-X-KEY:METHOD=AES-128,URI=\"data:text/plain;base64,AAECAwQFBgcICQoLDA0ODw==\"",
            "#EXTINF:2.0,",
            "\(base)/p/abs.ts",
            "#X-VENDOR:URI=\"untouched\"",
            "",
        ].joined(separator: "\r\n")
        try Data(playlist.utf8).write(to: root.appendingPathComponent("p/tags.m3u8"))
        let cache = try openCache(directory)
        defer { cache.close() }
        let clientHost = "localhost:\(cache.port!)"
        let response = try RawHTTPClient.get(url: try cache.proxyURL(for: base + "/p/tags.m3u8"),
                                             headers: [("Host", clientHost)], timeout: 20)
        XCTAssertEqual(response.status, 200)
        let output = String(decoding: response.body, as: UTF8.self)
        let inLines = playlist.components(separatedBy: "\r\n")
        let outLines = output.components(separatedBy: "\r\n")
        XCTAssertEqual(outLines.count, inLines.count, output)
        // Replace each proxy URL by the origin it carries: the result is the
        // input with each URI made absolute, and nothing else differs.
        let proxyPrefix = "http://" + clientHost
        var proxied: [String] = []
        for (a, b) in zip(inLines, outLines) where a != b {
            var rest = Substring(b)
            var rebuilt = ""
            while let start = rest.range(of: proxyPrefix) {
                rebuilt += rest[..<start.lowerBound]
                let tail = rest[start.upperBound...]
                let end = tail.firstIndex { $0 == "\"" || $0 == "," } ?? tail.endIndex
                let target = String(tail[..<end])
                guard let originURL = ProxyURLPath.origin(target) else { XCTFail("not a proxy URL: \(target)"); break }
                proxied.append(String(b[start.lowerBound..<end]))
                rebuilt += originURL.hasPrefix(base + "/p/") ? String(originURL.dropFirst(base.count + 3)) : originURL
                rest = tail[end...]
            }
            rebuilt += rest
            XCTAssertEqual(rebuilt, a.replacingOccurrences(of: base + "/p/", with: ""), "only the URI changed in \(a)")
        }
        XCTAssertEqual(proxied.count, names.count, "every http URI is proxied: \(proxied)")
        for name in ["skd://asset", "data:text/plain;base64,", "URI=\"untouched\""] {
            XCTAssertTrue(output.contains(name), "\(name) stays")
        }
        // Each proxied URI serves the origin's bytes.
        for uri in proxied {
            let fetched = try RawHTTPClient.get(url: uri.replacingOccurrences(of: "localhost", with: "127.0.0.1"), timeout: 20)
            let name = ProxyURLPath.origin(String(uri.dropFirst(proxyPrefix.count)))!
                .dropFirst(base.count + 3).prefix { $0 != "?" }
            XCTAssertEqual(fetched.status, 200, uri)
            XCTAssertBytes(fetched.body, equal: files[String(name)]!)
        }
    }

    func testLivePlaylistIsSeenChangedWithinItsTargetDuration() throws {
        let directory = try TemporaryDirectory(prefix: "hls-live")
        defer { directory.remove() }
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let origin = try NginxOrigin(root: root)
        let live = root.appendingPathComponent("live.m3u8")
        func write(_ sequence: Int) throws {
            var lines = ["#EXTM3U", "#EXT-X-TARGETDURATION:2", "#EXT-X-MEDIA-SEQUENCE:\(sequence)"]
            for i in sequence..<(sequence + 3) { lines += ["#EXTINF:2.0,", "seg\(i).ts"] }
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: live)
        }
        try write(10)
        let clock = TestClock()  // the VOD check below advances it instead of waiting
        let cache = try openCache(directory) { $0.clock = { clock.now } }
        defer { cache.close() }
        let proxyURL = try cache.proxyURL(for: origin.url("/live.m3u8"))
        let first = String(decoding: try RawHTTPClient.get(url: proxyURL, timeout: 20).body, as: UTF8.self)
        XCTAssertTrue(first.contains("#EXT-X-MEDIA-SEQUENCE:10"))
        // A second read at once is the cached copy (the origin is asked once).
        _ = try RawHTTPClient.get(url: proxyURL, timeout: 20)
        XCTAssertEqual(origin.accessLog().filter { $0.uri.hasSuffix("/live.m3u8") }.count, 1)
        // Same length, most likely the same mtime second: nginx's validators
        // may not change, and the new playlist must still come through.
        let lengthBefore = try Data(contentsOf: live).count
        try write(11)
        XCTAssertEqual(try Data(contentsOf: live).count, lengthBefore)
        let changedAt = Date()
        var seen = false
        for _ in 0..<40 where !seen {
            let body = String(decoding: try RawHTTPClient.get(url: proxyURL, timeout: 20).body, as: UTF8.self)
            seen = body.contains("#EXT-X-MEDIA-SEQUENCE:11")
            if !seen { Thread.sleep(forTimeInterval: 0.1) }
        }
        XCTAssertTrue(seen, "the new playlist reached the client")
        XCTAssertLessThan(Date().timeIntervalSince(changedAt), 2.0, "within the target duration")
        // A VOD playlist is not re-checked.
        try Data("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg.ts\n#EXT-X-ENDLIST\n".utf8)
            .write(to: root.appendingPathComponent("vod.m3u8"))
        let vod = try cache.proxyURL(for: origin.url("/vod.m3u8"))
        _ = try RawHTTPClient.get(url: vod, timeout: 20)
        clock.advance(seconds: 3)  // past the target duration: a live playlist would be fetched again
        _ = try RawHTTPClient.get(url: vod, timeout: 20)
        XCTAssertEqual(origin.accessLog().filter { $0.uri.hasSuffix("/vod.m3u8") }.count, 1)
    }

    func testRedirectedPlaylistResolvesAgainstItsFinalURL() throws {
        let directory = try TemporaryDirectory(prefix: "hls-redirect")
        defer { directory.remove() }
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("real/dir"), withIntermediateDirectories: true)
        let origin = try NginxOrigin(root: root, extraServerConfig: "location = /short.m3u8 { return 302 /real/dir/index.m3u8; }")
        try Data("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg.ts?x=1\n#EXT-X-ENDLIST\n".utf8)
            .write(to: root.appendingPathComponent("real/dir/index.m3u8"))
        let segment = try TestFile.random(size: 5000, seed: 7, in: root.appendingPathComponent("real/dir"), name: "seg.ts")
        let cache = try openCache(directory)
        defer { cache.close() }
        for _ in 0..<2 {  // a miss, then a hit
            let body = String(decoding: try RawHTTPClient.get(url: try cache.proxyURL(for: origin.url("/short.m3u8")), timeout: 20).body,
                              as: UTF8.self)
            let line = body.split(separator: "\n")[3]
            XCTAssertEqual(ProxyURLPath.origin(String(line.dropFirst("http://127.0.0.1:\(cache.port!)".count))),
                           origin.url("/real/dir/seg.ts?x=1"))
            XCTAssertBytes(try RawHTTPClient.get(url: String(line), timeout: 20).body, equal: segment)
        }
    }

    /// Issue #22: an origin that always sends its playlists gzip
    /// (`Content-Encoding: gzip`, as object stores do): the playlist is
    /// decoded to be rewritten, so its segments go through the cache too.
    func testGzipPlaylistIsRewrittenOnProxyURLs() throws {
        let directory = try TemporaryDirectory(prefix: "hls-gzip")
        defer { directory.remove() }
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let origin = try NginxOrigin(root: root, extraServerConfig: "location ~ \\.m3u8$ { add_header Content-Encoding gzip; }")
        let playlist = root.appendingPathComponent("index.m3u8")
        try Data("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg.ts\n#EXT-X-ENDLIST\n".utf8).write(to: playlist)
        let zipped = try TestTools.run("gzip", ["-n", "-f", playlist.path])
        XCTAssertTrue(zipped.succeeded, zipped.stderr)
        try FileManager.default.moveItem(at: root.appendingPathComponent("index.m3u8.gz"), to: playlist)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: playlist.path)
        let segment = try TestFile.random(size: 5000, seed: 8, in: root, name: "seg.ts")
        let cache = try openCache(directory)
        defer { cache.close() }
        let url = try cache.proxyURL(for: origin.url("/index.m3u8"))
        for _ in 0..<2 {  // a miss, then a hit
            let raw = try RawHTTPClient.get(url: url, headers: [("Accept-Encoding", "gzip")], timeout: 20)
            XCTAssertEqual(raw.header("Content-Encoding"), "gzip")
            XCTAssertEqual(Array(raw.body.prefix(2)), [0x1F, 0x8B], "still gzip, as the head says")
            let out = directory.file("playlist.txt")
            let fetched = try TestTools.run("curl", ["-sS", "-f", "--compressed", "-o", out.path, url])
            XCTAssertTrue(fetched.succeeded, fetched.stderr)
            let text = try String(contentsOf: out, encoding: .utf8)
            let line = String(text.split(separator: "\n")[3])
            XCTAssertEqual(ProxyURLPath.origin(String(line.dropFirst("http://127.0.0.1:\(cache.port!)".count))),
                           origin.url("/seg.ts"), text)
            XCTAssertBytes(try RawHTTPClient.get(url: line, timeout: 20).body, equal: segment)
        }
        XCTAssertEqual(origin.accessLog().filter { $0.uri == "/index.m3u8" }.count, 1, "the playlist was cached")
    }

    func testGenericTypedPlaylistIsRecognisedByItsBody() throws {
        let directory = try TemporaryDirectory(prefix: "hls-sniff")
        defer { directory.remove() }
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        // No extension nginx knows: served as application/octet-stream.
        let origin = try NginxOrigin(root: root)
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg.ts\n#EXT-X-ENDLIST\n"
        try Data(text.utf8).write(to: root.appendingPathComponent("playlist"))
        let cache = try openCache(directory)
        defer { cache.close() }
        let url = try cache.proxyURL(for: origin.url("/playlist"))
        let cold = try RawHTTPClient.get(url: url, timeout: 20)
        XCTAssertEqual(cold.header("Content-Type"), "application/octet-stream")
        XCTAssertEqual(String(decoding: cold.body, as: UTF8.self), text, "cold: the origin's bytes, unchanged")
        let warm = String(decoding: try RawHTTPClient.get(url: url, timeout: 20).body, as: UTF8.self)
        XCTAssertTrue(warm.contains("http://127.0.0.1:\(cache.port!)" + ProxyURLPath.of(origin.url("/seg.ts"))), warm)
        // A ranged read of a generic file keeps its range (nothing is buffered to sniff).
        let media = try TestFile.random(size: 100_000, seed: 9, in: root, name: "blob")
        origin.clearAccessLog()
        let part = try RawHTTPClient.get(url: try cache.proxyURL(for: origin.url("/blob")), range: "bytes=100-199", timeout: 20)
        XCTAssertBytes(part.body, equal: media, range: 100..<200)
        XCTAssertEqual(origin.accessLog(waitingFor: 1).map(\.range), ["bytes=100-199"])
    }

    func testBlockingReloadPassesThroughWithItsQuery() throws {
        let directory = try TemporaryDirectory(prefix: "hls-llhls")
        defer { directory.remove() }
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let origin = try NginxOrigin(root: root)
        try Data("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg.ts\n".utf8).write(to: root.appendingPathComponent("ll.m3u8"))
        let cache = try openCache(directory)
        defer { cache.close() }
        let url = origin.url("/ll.m3u8?_HLS_msn=5&_HLS_part=1")
        for _ in 0..<2 {
            let response = try RawHTTPClient.get(url: try cache.proxyURL(for: url), timeout: 20)
            XCTAssertEqual(response.status, 200)
            XCTAssertTrue(String(decoding: response.body, as: UTF8.self).contains("/p/"), "still rewritten")
        }
        let asked = origin.accessLog(waitingFor: 2).filter { $0.uri.contains("ll.m3u8") }
        XCTAssertEqual(asked.count, 2, "each blocking reload reaches the origin")
        XCTAssertTrue(asked.allSatisfy { $0.uri.contains("_HLS_msn=5&_HLS_part=1") }, "\(asked.map(\.uri))")
        XCTAssertFalse(cache.cachedResources().contains { $0.url == url }, "not kept")
    }
}

/// Proxy URL paths for assertions (the package's ProxyURL, seen from tests).
enum ProxyURLPath {
    static func of(_ origin: String) -> String {
        let encoded = Data(origin.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return "/p/" + encoded + "/" + (origin.split(separator: "/").last.map { String($0.prefix { $0 != "?" }) } ?? "")
    }

    static func origin(_ target: String) -> String? {
        let parts = target.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[1] == "p" else { return nil }
        var b64 = parts[2].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        return Data(base64Encoded: b64).map { String(decoding: $0, as: UTF8.self) }
    }
}
