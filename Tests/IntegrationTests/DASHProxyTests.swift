import Foundation
@testable import HTTPCache
import XCTest

/// DASH through the proxy: ffmpeg-made presentations on nginx, played by
/// ffmpeg through the proxy (rewritten MPDs) and compared frame by frame
/// with the origin, then again offline after a preload.
final class DASHProxyTests: XCTestCase {
    func openCache(_ directory: TemporaryDirectory, folder: String = "cache", encryptionKey: [UInt8]? = nil) throws -> MediaCache {
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file(folder).path)
        configuration.readTimeout = 5
        configuration.encryptionKey = encryptionKey
        let cache = try MediaCache(configuration: configuration, logger: LogCapture().logger)
        try cache.serve()
        return cache
    }

    /// Frame checksums compared, a failure told briefly (first difference).
    func assertSameFrames(_ got: [String], _ expected: [String], _ what: String, line: UInt = #line) {
        guard got != expected else { return }
        let first = Array(zip(got, expected)).firstIndex { $0.0 != $0.1 } ?? min(got.count, expected.count)
        XCTFail("\(what): \(got.count) frames, expected \(expected.count); first difference at \(first)", line: line)
    }

    /// The preloaded folder is encrypted at rest: DASH rewriting and preloading work over it.
    func testTemplatePresentationsPlayFrameIdenticalThroughTheProxyAndOfflineAfterAPreload() throws {
        let fixture = try DASHFixture()
        let directory = try TemporaryDirectory(prefix: "dash-proxy")
        defer { directory.remove() }
        let cache = try openCache(directory)
        defer { cache.close() }
        let urls = [fixture.timeline, fixture.number]
        var references: [String: [String]] = [:]
        for url in urls {
            let reference = try HLSFixture.frameMD5(url)
            XCTAssertGreaterThan(reference.count, 150, "6 s of video and audio frames")
            references[url] = reference
            assertSameFrames(try HLSFixture.frameMD5(try cache.proxyURL(for: url)), reference, "\(url) through the proxy")
        }
        // The rewritten MPD names the proxy only, in the base form, templates intact.
        let port = cache.port!
        let body = try RawHTTPClient.get(url: try cache.proxyURL(for: fixture.timeline), timeout: 20).body
        let text = String(decoding: body, as: UTF8.self)
        XCTAssertTrue(text.contains("media=\"http://127.0.0.1:\(port)/t/"), text)
        XCTAssertTrue(text.contains("/chunk-stream$RepresentationID$-$Number%05d$.m4s\""), text)
        XCTAssertFalse(text.contains("media=\"chunk-stream"), text)
        // Only the URLs changed: the origin's bytes with the values put back are the same.
        let original = try String(contentsOf: fixture.file(for: fixture.timeline)!, encoding: .utf8)
        let prefixPattern = try NSRegularExpression(pattern: "http://127\\.0\\.0\\.1:\(port)/t/[A-Za-z0-9_-]+/")
        let restored = prefixPattern.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text),
                                                              withTemplate: "")
        XCTAssertEqual(restored, original)
        // The cache keeps the origin's bytes.
        let stored = cache.cachedResources().first { $0.url == fixture.timeline }
        XCTAssertEqual(stored?.totalLength, Int64(original.utf8.count))

        // Another folder, encrypted and only preloaded; then the origin stops: both play from it, frame for frame.
        let preloaded = try openCache(directory, folder: "preloaded", encryptionKey: EncryptionTests.key(3))
        defer { preloaded.close() }
        for url in urls {
            let progress = try XCTUnwrap(preloaded.preload(url).wait(timeout: 60)).get()
            XCTAssertEqual(progress.segmentsDone, 9, "\(url): 3 segments of 3 representations")
            XCTAssertGreaterThanOrEqual(progress.resourcesDone, 13, "\(url): the MPD, 3 initialization and 9 media segments")
            XCTAssertFalse(progress.live)
        }
        fixture.origin.stop()
        for url in urls {
            assertSameFrames(try HLSFixture.frameMD5(try preloaded.proxyURL(for: url)), references[url] ?? [], "\(url) offline")
        }
    }

    /// One file per representation, as byte ranges (SegmentList of
    /// mediaRanges; SegmentBase whose sidx names them): a preload fetches
    /// every byte of every file, read whole and byte-exact with the origin stopped.
    func testSingleFileFormsPreloadEveryByte() throws {
        let fixture = try DASHFixture()
        let directory = try TemporaryDirectory(prefix: "dash-single")
        defer { directory.remove() }
        let cache = try openCache(directory)
        defer { cache.close() }
        for url in [fixture.single, fixture.base] {
            let progress = try XCTUnwrap(cache.preload(url, options: PreloadOptions(pin: url == fixture.single))
                .wait(timeout: 60)).get()
            // 3 segments of 3 representations (the remuxed audio may be cut otherwise).
            XCTAssertEqual(progress.segmentsDone, progress.segmentsTotal, url)
            XCTAssertGreaterThanOrEqual(progress.segmentsDone, url == fixture.single ? 9 : 7, url)
        }
        // Pinned: the MPD and the files of the SegmentList form, until unpinned.
        let pinned = Set(cache.cachedResources().filter(\.isPinned).map(\.url))
        XCTAssertEqual(pinned, Set([fixture.single] + fixture.singleFiles))
        XCTAssertEqual(cache.unpin(fixture.single), 4)
        XCTAssertTrue(cache.cachedResources().allSatisfy { !$0.isPinned })

        // The command, with a choice: the lowest video and the English audio of the SegmentBase form.
        let folder = directory.file("cli").path
        let cli = try TestTools.run(CLITests.binary, ["preload", fixture.base, "--variant", "lowest", "--language", "en",
                                                      "--cache-dir", folder], timeout: 120)
        XCTAssertTrue(cli.succeeded, cli.stderr)
        XCTAssertTrue(cli.stdout.hasPrefix("\(fixture.base): done, "), cli.stdout)
        let listed = try TestTools.run(CLITests.binary, ["cache", "list", "--cache-dir", folder], timeout: 60)
        XCTAssertTrue(listed.stdout.contains("stream1.mp4") && listed.stdout.contains("stream2.mp4"), listed.stdout)
        XCTAssertFalse(listed.stdout.contains("stream0.mp4"), "not the highest video: \(listed.stdout)")

        fixture.origin.stop()
        for url in fixture.singleFiles + fixture.baseFiles {
            let expected = try Data(contentsOf: fixture.file(for: url)!)
            let response = try RawHTTPClient.get(url: try cache.proxyURL(for: url), timeout: 20)
            XCTAssertEqual(response.status, 200, url)
            XCTAssertEqual(Data(response.body), expected, "\(url) offline")
        }
    }

    /// LAN mode: the MPD's URLs are signed over their base, so a player
    /// plays it frame for frame; the same URLs unsigned, or signed for
    /// another base, are refused.
    func testLANModePlaysThroughSignedBaseFormURLs() throws {
        let fixture = try DASHFixture()
        let directory = try TemporaryDirectory(prefix: "dash-lan")
        defer { directory.remove() }
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("cache").path)
        configuration.host = "0.0.0.0"
        let cache = try MediaCache(configuration: configuration, logger: LogCapture().logger)
        defer { cache.close() }
        try cache.serve()
        let url = try cache.proxyURL(for: fixture.timeline)
        assertSameFrames(try HLSFixture.frameMD5(url), try HLSFixture.frameMD5(fixture.timeline), "LAN mode")
        let text = String(decoding: try RawHTTPClient.get(url: url, timeout: 20).body, as: UTF8.self)
        let media = try XCTUnwrap(text.components(separatedBy: "media=\"").dropFirst().first?.prefix { $0 != "\"" })
        XCTAssertTrue(media.contains("~"), "signed: \(media)")
        let filled = String(media).replacingOccurrences(of: "$RepresentationID$", with: "0")
            .replacingOccurrences(of: "$Number%05d$", with: "00001")
        XCTAssertEqual(try RawHTTPClient.get(url: filled, timeout: 20).status, 200)
        let unsigned = filled.replacingOccurrences(of: #"~[A-Za-z0-9_-]+/"#, with: "/", options: .regularExpression)
        XCTAssertEqual(try RawHTTPClient.get(url: unsigned, timeout: 20).status, 403, unsigned)
        let climbing = filled.replacingOccurrences(of: "chunk-stream0-00001.m4s", with: "../timeline/manifest.mpd")
        XCTAssertEqual(try RawHTTPClient.get(url: climbing, timeout: 20).status, 403, climbing)
    }

    /// Reverse-proxy mode: the MPD's paths map onto the origin; absolute
    /// URLs on the origin's host are pointed at the proxy, others left.
    func testReverseModePlaysAndPointsOriginURLsAtTheProxy() throws {
        let fixture = try DASHFixture()
        let directory = try TemporaryDirectory(prefix: "dash-reverse")
        defer { directory.remove() }
        let absolute = """
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static">
          <Location>\(fixture.origin.url("/dash/abs.mpd"))</Location><BaseURL>http://other.example/x/</BaseURL>
        </MPD>

        """
        try Data(absolute.utf8).write(to: fixture.root.appendingPathComponent("dash/abs.mpd"))
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("cache").path)
        configuration.origin = fixture.origin.baseURL
        let cache = try MediaCache(configuration: configuration, logger: LogCapture().logger)
        defer { cache.close() }
        try cache.serve()
        let proxy = "http://127.0.0.1:\(cache.port!)"
        assertSameFrames(try HLSFixture.frameMD5(proxy + "/dash/timeline/manifest.mpd"),
                         try HLSFixture.frameMD5(fixture.timeline), "reverse mode")
        let text = String(decoding: try RawHTTPClient.get(url: proxy + "/dash/abs.mpd", timeout: 20).body, as: UTF8.self)
        XCTAssertEqual(text, absolute.replacingOccurrences(of: fixture.origin.baseURL, with: proxy))
    }

    /// An MPD stored gzip (`Content-Encoding: gzip`, as object stores send
    /// it) is inflated, rewritten and deflated like a gzip playlist, through
    /// proxy URLs and in reverse mode: its segments go through the cache.
    func testGzipManifestIsRewrittenOnProxyURLsAndInReverseMode() throws {
        let directory = try TemporaryDirectory(prefix: "dash-gzip")
        defer { directory.remove() }
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("d"), withIntermediateDirectories: true)
        let origin = try NginxOrigin(root: root, extraServerConfig: "location ~ \\.mpd$ { add_header Content-Encoding gzip; }")
        let segment = try TestFile.random(size: 7000, seed: 12, in: root.appendingPathComponent("d"), name: "seg-1.m4s")
        let manifest = root.appendingPathComponent("d/manifest.mpd")
        try Data("""
        <?xml version="1.0"?>
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static">
          <BaseURL>\(origin.url("/d/"))</BaseURL>
          <Period><AdaptationSet><Representation id="r" bandwidth="1">
            <SegmentTemplate media="seg-$Number$.m4s" startNumber="1"/>
          </Representation></AdaptationSet></Period>
        </MPD>

        """.utf8).write(to: manifest)
        let zipped = try TestTools.run("gzip", ["-n", "-f", manifest.path])
        XCTAssertTrue(zipped.succeeded, zipped.stderr)
        try FileManager.default.moveItem(at: root.appendingPathComponent("d/manifest.mpd.gz"), to: manifest)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: manifest.path)
        // Published a day ago: reverse mode reuses a response without explicit
        // freshness for 10% of its Last-Modified age (RFC 9111 §4.2.2).
        for path in [manifest.path, segment.url.path] {
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -86_400)], ofItemAtPath: path)
        }

        /// The MPD as a client gets it (still gzip, as its head says) and the BaseURL it names.
        func baseURL(_ url: String) throws -> String {
            let raw = try RawHTTPClient.get(url: url, headers: [("Accept-Encoding", "gzip")], timeout: 20)
            XCTAssertEqual(raw.header("Content-Encoding"), "gzip")
            XCTAssertEqual(Array(raw.body.prefix(2)), [0x1F, 0x8B], "still gzip, as the head says")
            let out = directory.file("manifest.txt")
            let fetched = try TestTools.run("curl", ["-sS", "-f", "--compressed", "-o", out.path, url])
            XCTAssertTrue(fetched.succeeded, fetched.stderr)
            let text = try String(contentsOf: out, encoding: .utf8)
            let base = try XCTUnwrap(text.components(separatedBy: "<BaseURL>").dropFirst().first?
                .components(separatedBy: "</BaseURL>").first, text)
            return base
        }

        let cache = try openCache(directory)
        let proxy = "http://127.0.0.1:\(cache.port!)"
        for _ in 0..<2 {  // a miss, then a hit
            let base = try baseURL(try cache.proxyURL(for: origin.url("/d/manifest.mpd")))
            XCTAssertTrue(base.hasPrefix(proxy + "/t/"), "the base form on the proxy: \(base)")
            XCTAssertBytes(try RawHTTPClient.get(url: base + "seg-1.m4s", timeout: 20).body, equal: segment)
        }
        cache.close()

        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("reverse").path)
        configuration.origin = origin.baseURL
        let reverse = try MediaCache(configuration: configuration, logger: LogCapture().logger)
        defer { reverse.close() }
        try reverse.serve()
        let front = "http://127.0.0.1:\(reverse.port!)"
        for _ in 0..<2 {
            let base = try baseURL(front + "/d/manifest.mpd")
            XCTAssertEqual(base, front + "/d/", "the origin's absolute URL points at the proxy")
            XCTAssertBytes(try RawHTTPClient.get(url: base + "seg-1.m4s", timeout: 20).body, equal: segment)
        }
        XCTAssertEqual(origin.accessLog().filter { $0.uri == "/d/seg-1.m4s" }.count, 2, "one fetch per cache folder")
    }

    /// An MPD with every URL carrier: each URL in the rewritten MPD leads
    /// to the proxy (templates filled in as a player would) and serves the
    /// origin's bytes; licence and timing servers stay as written; nothing
    /// else changes.
    func testEveryCarrierLeadsToTheProxyAndServesTheOriginBytes() throws {
        let directory = try TemporaryDirectory(prefix: "dash-carriers")
        defer { directory.remove() }
        let root = directory.file("www")
        let origin = try NginxOrigin(root: root, start: false)
        let base = "http://127.0.0.1:\(origin.port)"
        let mpd = """
        <?xml version="1.0" encoding="utf-8"?>
        <!-- every carrier -->
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:x="urn:x" type="static" mediaPresentationDuration="PT4S">
          <BaseURL>base/</BaseURL>
          <Location>\(base)/d/manifest.mpd</Location>
          <PatchLocation ttl="60">patch.mpp</PatchLocation>
          <UTCTiming schemeIdUri="urn:mpeg:dash:utc:http-iso:2014" value="https://time.example/now"/>
          <x:Unknown keep="1">text</x:Unknown>
          <Period id="p0" duration="PT4S">
            <BaseURL>p/</BaseURL>
            <AdaptationSet contentType="video">
              <ContentProtection schemeIdUri="urn:uuid:e2719d58-a985-b3c9-781a-b030af78d30e"><dashif:Laurl xmlns:dashif="https://dashif.org/CPS">https://licence.example/ck</dashif:Laurl></ContentProtection>
              <BaseURL>a/</BaseURL>
              <SegmentTemplate media="t/$RepresentationID$/$Number%03d$.m4s" initialization="t/$RepresentationID$/init.mp4" index="t/$RepresentationID$/index.sidx" duration="2" startNumber="1"/>
              <Representation id="r1" bandwidth="1000"/>
            </AdaptationSet>
            <AdaptationSet contentType="audio">
              <Representation id="a1" bandwidth="100"><BaseURL>audio/</BaseURL>
                <SegmentList duration="2"><Initialization sourceURL="ainit.mp4"/><RepresentationIndex sourceURL="aindex.sidx"/>
                  <SegmentURL media="a1.m4s" index="a1.sidx"/><SegmentURL media="a2.m4s?x=1&amp;y=2"/></SegmentList>
              </Representation>
              <Representation id="a2" bandwidth="100"><BaseURL>a2.mp4</BaseURL>
                <SegmentBase indexRange="0-99"><Initialization sourceURL="a2init.mp4"/></SegmentBase>
              </Representation>
            </AdaptationSet>
          </Period>
          <Period id="p1" xlink:href="remote-period.xml" xlink:actuate="onLoad"/>
        </MPD>

        """
        // (value as the origin wrote it, file it names, as a player fills it in)
        let carriers: [(written: String, file: String, filled: [String: String])] = [
            ("base/", "d/base/index.html", [:]),
            ("\(base)/d/manifest.mpd", "d/manifest.mpd", [:]),
            ("patch.mpp", "d/base/patch.mpp", [:]),
            ("p/", "d/base/p/index.html", [:]),
            ("a/", "d/base/p/a/index.html", [:]),
            ("t/$RepresentationID$/$Number%03d$.m4s", "d/base/p/a/t/r1/002.m4s", ["$RepresentationID$": "r1", "$Number%03d$": "002"]),
            ("t/$RepresentationID$/init.mp4", "d/base/p/a/t/r1/init.mp4", ["$RepresentationID$": "r1"]),
            ("t/$RepresentationID$/index.sidx", "d/base/p/a/t/r1/index.sidx", ["$RepresentationID$": "r1"]),
            ("audio/", "d/base/p/audio/index.html", [:]),
            ("ainit.mp4", "d/base/p/audio/ainit.mp4", [:]),
            ("aindex.sidx", "d/base/p/audio/aindex.sidx", [:]),
            ("a1.m4s", "d/base/p/audio/a1.m4s", [:]),
            ("a1.sidx", "d/base/p/audio/a1.sidx", [:]),
            ("a2.m4s?x=1&amp;y=2", "d/base/p/audio/a2.m4s", [:]),
            ("a2.mp4", "d/base/p/a2.mp4", [:]),
            ("a2init.mp4", "d/base/p/a2init.mp4", [:]),
            ("remote-period.xml", "d/base/remote-period.xml", [:]),
        ]
        for (k, carrier) in carriers.enumerated() where carrier.file != "d/manifest.mpd" {
            let file = root.appendingPathComponent(carrier.file)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            _ = try TestFile.random(size: 500 + k * 31, seed: UInt64(k + 1), in: file.deletingLastPathComponent(),
                                    name: file.lastPathComponent)
        }
        try Data(mpd.utf8).write(to: root.appendingPathComponent("d/manifest.mpd"))
        try origin.start()
        let cache = try openCache(directory)
        defer { cache.close() }
        let port = cache.port!
        let rewritten = String(decoding: try RawHTTPClient.get(url: try cache.proxyURL(for: origin.url("/d/manifest.mpd")),
                                                               timeout: 20).body, as: UTF8.self)
        // Put every written value back where the rewritten one stands: the origin's MPD.
        var restored = rewritten
        var proxied: [String] = []
        let pattern = try NSRegularExpression(pattern: "http://127\\.0\\.0\\.1:\(port)/t/[^\"<]*")
        for match in pattern.matches(in: rewritten, range: NSRange(rewritten.startIndex..., in: rewritten)) {
            proxied.append(String(rewritten[Range(match.range, in: rewritten)!]))
        }
        XCTAssertEqual(proxied.count, carriers.count, rewritten)
        for (url, carrier) in zip(proxied, carriers) {
            restored = restored.replacingOccurrences(of: ">" + url + "<", with: ">" + carrier.written + "<")
                .replacingOccurrences(of: "\"" + url + "\"", with: "\"" + carrier.written + "\"")
            var filled = url.replacingOccurrences(of: "&amp;", with: "&")
            for (identifier, value) in carrier.filled { filled = filled.replacingOccurrences(of: identifier, with: value) }
            if filled.hasSuffix("/") { filled += "index.html" }
            let response = try RawHTTPClient.get(url: filled, timeout: 20)
            XCTAssertEqual(response.status, 200, "\(filled) for \(carrier.written)")
            // The MPD itself (Location) comes rewritten, as any MPD through the proxy.
            let expected = carrier.file == "d/manifest.mpd" ? Data(rewritten.utf8)
                : try Data(contentsOf: root.appendingPathComponent(carrier.file))
            XCTAssertEqual(Data(response.body), expected, "\(filled) serves \(carrier.file)")
        }
        XCTAssertEqual(restored, mpd, "only the URLs changed")
        XCTAssertTrue(rewritten.contains(">https://licence.example/ck<") && rewritten.contains("value=\"https://time.example/now\""))
        // Every request went to the proxy's origin through the proxy: the player's fetches, all of them.
        XCTAssertEqual(Set(origin.accessLog().map(\.uri)).count, carriers.count)
    }

    /// A live MPD: reused within its minimumUpdatePeriod, then fetched anew,
    /// so a change at the origin is seen within that period.
    func testDynamicManifestChangedAtTheOriginIsSeenWithinItsUpdatePeriod() throws {
        let directory = try TemporaryDirectory(prefix: "dash-live")
        defer { directory.remove() }
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let origin = try NginxOrigin(root: root)
        let live = root.appendingPathComponent("live.mpd")
        func write(_ start: Int) throws {
            try Data("""
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="dynamic" minimumUpdatePeriod="PT1S" availabilityStartTime="2026-01-01T00:00:00Z">
              <Period start="PT0S"><AdaptationSet><Representation id="v" bandwidth="1">
                <SegmentTemplate media="$Number$.m4s" startNumber="\(start)" duration="2"/>
              </Representation></AdaptationSet></Period>
            </MPD>

            """.utf8).write(to: live)
        }
        try write(10)
        let cache = try openCache(directory)
        defer { cache.close() }
        let proxyURL = try cache.proxyURL(for: origin.url("/live.mpd"))
        XCTAssertTrue(String(decoding: try RawHTTPClient.get(url: proxyURL, timeout: 20).body, as: UTF8.self)
            .contains("startNumber=\"10\""))
        _ = try RawHTTPClient.get(url: proxyURL, timeout: 20)
        XCTAssertEqual(origin.accessLog().filter { $0.uri == "/live.mpd" }.count, 1, "reused within the period")
        try write(11)  // same length, likely the same second: validators may not change
        let changedAt = Date()
        var seen = false
        for _ in 0..<40 where !seen {
            seen = String(decoding: try RawHTTPClient.get(url: proxyURL, timeout: 20).body, as: UTF8.self)
                .contains("startNumber=\"11\"")
            if !seen { Thread.sleep(forTimeInterval: 0.1) }
        }
        XCTAssertTrue(seen, "the new MPD reached the client")
        XCTAssertLessThan(Date().timeIntervalSince(changedAt), 1.9, "within minimumUpdatePeriod")
        // A preload takes what is available now (segments of 2 s, 7 s after
        // the availability start: 3 of them), and says it was live.
        let start = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-7))
        try Data("""
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="dynamic" minimumUpdatePeriod="PT1S" availabilityStartTime="\(start)">
          <Period start="PT0S"><AdaptationSet><Representation id="v" bandwidth="1">
            <SegmentTemplate initialization="init.mp4" media="seg$Number$.m4s" startNumber="1" duration="2"/>
          </Representation></AdaptationSet></Period>
        </MPD>

        """.utf8).write(to: root.appendingPathComponent("now.mpd"))
        for name in ["init.mp4"] + (1...8).map({ "seg\($0).m4s" }) {
            _ = try TestFile.random(size: 300, seed: 9, in: root, name: name)
        }
        let progress = try XCTUnwrap(cache.preload(origin.url("/now.mpd")).wait(timeout: 30)).get()
        XCTAssertTrue(progress.live)
        XCTAssertTrue((3...4).contains(progress.segmentsDone), "\(progress.segmentsDone) segments available")
        let fetched = Set(origin.accessLog().map(\.uri))
        XCTAssertTrue(fetched.isSuperset(of: ["/init.mp4", "/seg1.m4s", "/seg2.m4s", "/seg3.m4s"]), "\(fetched)")
        XCTAssertFalse(fetched.contains("/seg6.m4s"), "not yet available")
    }
}
