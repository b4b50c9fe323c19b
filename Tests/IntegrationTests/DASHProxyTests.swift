import Foundation
@testable import HTTPCache
import XCTest

/// DASH through the proxy: ffmpeg-made presentations on nginx, played by
/// ffmpeg through the proxy (rewritten MPDs) and compared frame by frame
/// with the origin, then again offline after a preload.
final class DASHProxyTests: XCTestCase {
    func openCache(_ directory: TemporaryDirectory, folder: String = "cache") throws -> MediaCache {
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file(folder).path)
        configuration.readTimeout = 5
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

        // Another folder, only preloaded; then the origin stops: both play from it, frame for frame.
        let preloaded = try openCache(directory, folder: "preloaded")
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
            let progress = try XCTUnwrap(cache.preload(url).wait(timeout: 60)).get()
            // 3 segments of 3 representations (the remuxed audio may be cut otherwise).
            XCTAssertEqual(progress.segmentsDone, progress.segmentsTotal, url)
            XCTAssertGreaterThanOrEqual(progress.segmentsDone, url == fixture.single ? 9 : 7, url)
        }
        fixture.origin.stop()
        for url in fixture.singleFiles + fixture.baseFiles {
            let expected = try Data(contentsOf: fixture.file(for: url)!)
            let response = try RawHTTPClient.get(url: try cache.proxyURL(for: url), timeout: 20)
            XCTAssertEqual(response.status, 200, url)
            XCTAssertEqual(Data(response.body), expected, "\(url) offline")
        }
    }
}
