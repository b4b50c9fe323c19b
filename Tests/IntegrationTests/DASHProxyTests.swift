import Foundation
@testable import HTTPCache
import XCTest

/// DASH through the proxy: ffmpeg-made presentations on nginx, played by
/// ffmpeg through the proxy (rewritten MPDs) and compared frame by frame
/// with the origin, then again offline after a preload.
final class DASHProxyTests: XCTestCase {
    func openCache(_ directory: TemporaryDirectory) throws -> MediaCache {
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("cache").path)
        configuration.readTimeout = 5
        let cache = try MediaCache(configuration: configuration, logger: LogCapture().logger)
        try cache.serve()
        return cache
    }

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
            XCTAssertEqual(try HLSFixture.frameMD5(try cache.proxyURL(for: url)), reference, "\(url) through the proxy")
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

        // A preload of each, then the origin stops: both still play, frame for frame.
        for url in urls {
            let progress = try XCTUnwrap(cache.preload(url).wait(timeout: 60)).get()
            XCTAssertEqual(progress.segmentsDone, 9, "\(url): 3 segments of 3 representations")
        }
        fixture.origin.stop()
        for url in urls {
            XCTAssertEqual(try HLSFixture.frameMD5(try cache.proxyURL(for: url)), references[url], "\(url) offline")
        }
    }
}
