import CacheHTTP
import CacheIO
@testable import CacheLoading
import CacheStorage
import Logging
import XCTest

final class ManifestTransformHLSTests: XCTestCase {
    let logger = Logger(label: "test")
    let base = "http://origin.test:8081/media/"
    let proxyHost = "127.0.0.1:9000"

    /// Every URI-bearing tag, relative and absolute URIs, queries, a key
    /// that must stay (skd://), a data: URI, unknown tags, CRLF line ends.
    var everyTag: String {
        [
            "#EXTM3U",
            "#EXT-X-VERSION:9",
            "#EXT-X-CONTENT-STEERING:SERVER-URI=\"steering.json?x=1\",PATHWAY-ID=\"A\"",
            "#EXT-X-SESSION-DATA:DATA-ID=\"com.x\",URI=\"session.json\"",
            "#EXT-X-SESSION-KEY:METHOD=AES-128,URI=\"https://keys.test/k1?t=9\"",
            "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"en\",URI=\"audio/en.m3u8\"",
            "#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=1000,URI=\"iframes.m3u8\"",
            "#EXT-X-STREAM-INF:BANDWIDTH=200000,AUDIO=\"a\"\r",
            "low/index.m3u8?sig=abc",
            "#X-UNKNOWN-TAG:URI=\"keep.me\"",
            "# a comment with http://origin.test:8081/x",
            "",
        ].joined(separator: "\n")
    }

    var mediaPlaylist: String {
        [
            "#EXTM3U",
            "#EXT-X-TARGETDURATION:2",
            "#EXT-X-PART-INF:PART-TARGET=0.5",
            "#EXT-X-KEY:METHOD=AES-128,URI=\"../keys/k.bin\",IV=0x00000000000000000000000000000001",
            "#EXT-X-KEY:METHOD=SAMPLE-AES,KEYFORMAT=\"com.apple.streamingkeydelivery\",URI=\"skd://asset-1\"",
            "#EXT-X-MAP:URI=\"http://origin.test:8081/media/init.mp4\",BYTERANGE=\"700@0\"",
            "#EXT-X-DATERANGE:ID=\"ad\",START-DATE=\"2026-01-01T00:00:00Z\",X-ASSET-URI=\"ad/master.m3u8\",X-ASSET-LIST=\"ads.json\"",
            "#EXTINF:2.0,",
            "seg0.m4s?token=a%20b",
            "#EXT-X-PART:DURATION=0.5,URI=\"part1.0.m4s\"",
            "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part1.1.m4s\"",
            "#EXT-X-RENDITION-REPORT:URI=\"../other/index.m3u8\",LAST-MSN=1",
            "#EXT-X-SESSION-DATA:DATA-ID=\"d\",VALUE=\"v\"",
            "#EXT-X-KEY:METHOD=AES-128,URI=\"data:text/plain;base64,AAAA\"",
            "#EXTINF:2.0,",
            "https://cdn.other.test/seg1.m4s",
        ].joined(separator: "\n")
    }

    func transform(_ mode: ManifestRewriteMode, hook: HLSURIHook? = nil) -> ManifestTransform {
        ManifestTransform(url: base + "index.m3u8", mode: mode, proxyHost: proxyHost,
                          format: .hls(hook: hook, proxyPath: nil), logger: logger)
    }

    /// Runs the transform the way a response does: the whole body at once.
    func run(_ t: ManifestTransform, _ text: String) throws -> String {
        String(decoding: t.rewritten(Array(text.utf8)), as: UTF8.self)
    }

    /// The origin URL a proxy URL of this test carries.
    func origin(ofProxyURL uri: String) -> String? {
        let prefix = "http://" + proxyHost
        guard uri.hasPrefix(prefix) else { return nil }
        return ProxyURL.origin(fromTarget: String(uri.dropFirst(prefix.count)))
    }

    func testProxyModeRewritesEveryURIAndNothingElse() throws {
        for text in [everyTag, mediaPlaylist] {
            let output = try run(transform(.proxyURLs), text)
            // Every URI the rewriter maps, mapped back, gives the input resolved:
            // the output with proxy URLs replaced by their origins equals the
            // input with every URI made absolute.
            var expected: [String] = []
            var restored: [String] = []
            let resolvedInput = try HLS.rewrite(Array(text.utf8), playlistURL: base + "index.m3u8") { absolute, _ in absolute }
            _ = try HLS.rewrite(Array(output.utf8), playlistURL: base + "index.m3u8") { absolute, _ in
                restored.append(self.origin(ofProxyURL: absolute) ?? "NOT A PROXY URL: " + absolute)
                return nil
            }
            _ = try HLS.rewrite(Array(text.utf8), playlistURL: base + "index.m3u8") { absolute, _ in
                expected.append(absolute)
                return nil
            }
            XCTAssertFalse(expected.isEmpty)
            XCTAssertEqual(restored, expected)
            let backToOrigins = try HLS.rewrite(Array(output.utf8), playlistURL: base + "index.m3u8") { absolute, _ in
                self.origin(ofProxyURL: absolute)
            }
            XCTAssertEqual(String(decoding: backToOrigins, as: UTF8.self), String(decoding: resolvedInput, as: UTF8.self))
        }
    }

    /// A playlist stored gzip (object stores) is decoded, rewritten and
    /// encoded again; a broken gzip body passes unchanged.
    func testGzipPlaylistIsRewrittenAndStaysGzip() throws {
        let plain = try run(transform(.proxyURLs), mediaPlaylist)
        let stored = try XCTUnwrap(Gzip.encode(Array(mediaPlaylist.utf8)))
        let output = served(transform(.proxyURLs), stored)
        XCTAssertTrue(Gzip.isGzip(output))
        XCTAssertEqual(Gzip.decode(output, cap: 1 << 20).map { String(decoding: $0, as: UTF8.self) }, plain)
        XCTAssertNotEqual(plain, mediaPlaylist)
        let broken = Array(stored.prefix(stored.count - 9))
        XCTAssertEqual(served(transform(.proxyURLs), broken), broken)
        let notPlaylist = try XCTUnwrap(Gzip.encode(Array("hello".utf8)))
        XCTAssertEqual(served(transform(.proxyURLs), notPlaylist), notPlaylist, "the stored bytes, unchanged")
    }

    func testProxyModeExactOutput() throws {
        let output = try run(transform(.proxyURLs), mediaPlaylist)
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let inputLines = mediaPlaylist.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(lines.count, inputLines.count)
        func proxy(_ origin: String) -> String { "http://" + proxyHost + ProxyURL.path(forOrigin: origin)! }
        XCTAssertEqual(lines[3], "#EXT-X-KEY:METHOD=AES-128,URI=\"\(proxy("http://origin.test:8081/keys/k.bin"))\",IV=0x00000000000000000000000000000001")
        XCTAssertEqual(lines[4], inputLines[4], "skd:// stays")
        XCTAssertEqual(lines[5], "#EXT-X-MAP:URI=\"\(proxy("http://origin.test:8081/media/init.mp4"))\",BYTERANGE=\"700@0\"")
        XCTAssertEqual(lines[8], proxy(base + "seg0.m4s?token=a%20b"), "query kept")
        XCTAssertEqual(lines[11], "#EXT-X-RENDITION-REPORT:URI=\"\(proxy("http://origin.test:8081/other/index.m3u8"))\",LAST-MSN=1")
        XCTAssertEqual(lines[13], inputLines[13], "data: stays")
        XCTAssertEqual(lines[15], proxy("https://cdn.other.test/seg1.m4s"))
        for i in [0, 1, 2, 4, 7, 12, 13, 14] { XCTAssertEqual(lines[i], inputLines[i]) }
    }

    func testForwardModeLeavesThePlaylistAlone() throws {
        XCTAssertEqual(try run(transform(.forward), everyTag), everyTag)
        XCTAssertEqual(try run(transform(.forward), mediaPlaylist), mediaPlaylist)
    }

    func testReverseModeMovesOriginHostKeepsRelativeAndOtherHosts() throws {
        let text = """
        #EXTM3U
        #EXT-X-TARGETDURATION:2
        #EXT-X-MAP:URI="HTTP://Origin.test:8081/media/init.mp4"
        #EXTINF:2,
        seg0.ts
        #EXTINF:2,
        http://origin.test:8081/media/seg1.ts?q=1
        #EXTINF:2,
        https://cdn.other.test/seg2.ts
        #EXTINF:2,
        //origin.test:8081/seg3.ts
        #EXTINF:2,
        http://origin.test/seg4.ts
        """
        let output = try run(transform(.reverse(originHost: "origin.test:8081")), text)
        XCTAssertEqual(output, """
        #EXTM3U
        #EXT-X-TARGETDURATION:2
        #EXT-X-MAP:URI="http://127.0.0.1:9000/media/init.mp4"
        #EXTINF:2,
        seg0.ts
        #EXTINF:2,
        http://127.0.0.1:9000/media/seg1.ts?q=1
        #EXTINF:2,
        https://cdn.other.test/seg2.ts
        #EXTINF:2,
        http://127.0.0.1:9000/seg3.ts
        #EXTINF:2,
        http://origin.test/seg4.ts
        """)
    }

    func testHookReplacesTheMapping() throws {
        let t = transform(.proxyURLs) { absolute, kind, proposed in
            kind == .key ? nil : proposed  // keys stay direct
        }
        let output = try run(t, mediaPlaylist)
        XCTAssertTrue(output.contains("URI=\"../keys/k.bin\""), output)
        XCTAssertFalse(output.contains("\nseg0.m4s"), "segments still go through the proxy")
    }

    func testRedirectedPlaylistResolvesAgainstItsFinalURL() throws {
        let t = ManifestTransform(url: "http://moved.test/new/index.m3u8", mode: .proxyURLs,
                                  proxyHost: proxyHost, format: .hls(hook: nil, proxyPath: nil), logger: logger)
        let output = try run(t, "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nseg0.ts\n")
        XCTAssertEqual(output, "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n"
                       + "http://127.0.0.1:9000" + ProxyURL.path(forOrigin: "http://moved.test/new/seg0.ts")! + "\n")
    }

    func testBadInputPassesThroughUnchanged() throws {
        let malformed = "#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"unterminated\n#EXTINF:2,\nseg.ts\n"
        XCTAssertEqual(try run(transform(.proxyURLs), malformed), malformed)
        let notAPlaylist = String(repeating: "binary\u{0}", count: 50)
        XCTAssertEqual(try run(transform(.proxyURLs), notAPlaylist), notAPlaylist)
        XCTAssertEqual(try run(transform(.proxyURLs), ""), "")
    }

    func testPlaylistsAreRecognisedAndForwardModeKeepsZeroCopy() {
        func picks(_ url: String, _ type: String?, prefix: String? = nil) -> Bool {
            HLS.isPlaylist(contentType: type, path: OriginURL.parse(url)!.pathAndQuery,
                           bodyPrefix: prefix.map { Array($0.utf8) } ?? [])
        }
        XCTAssertTrue(picks("http://o.test/a/x", "application/vnd.apple.mpegurl"))
        XCTAssertTrue(picks("http://o.test/a/x.m3u8?y=1", "application/octet-stream"))
        XCTAssertTrue(picks("http://o.test/a/x.M3U", nil))
        XCTAssertTrue(picks("http://o.test/a/x", "text/plain", prefix: "#EXTM3U\n#EXT"), "generic: the cached body tells")
        XCTAssertTrue(picks("http://o.test/a/x", nil, prefix: "\u{FEFF}#EXTM3U\n"))
        XCTAssertFalse(picks("http://o.test/a/x", "application/octet-stream"), "nothing cached yet: not buffered to sniff")
        XCTAssertFalse(picks("http://o.test/a/x", nil, prefix: "\u{0}\u{0}\u{0}\u{1C}ftyp"))
        XCTAssertFalse(picks("http://o.test/a/seg.ts", "video/mp2t", prefix: "#EXTM3U"))
        XCTAssertFalse(picks("http://o.test/a/x.m3u8", "video/mp4"))
        XCTAssertNil(ManifestTransform.choose(url: "http://o.test/x.m3u8", mode: .forward, clientHost: proxyHost,
                                              format: .hls(hook: nil, proxyPath: nil), logger: logger),
                     "forward mode keeps the zero-copy path")
        XCTAssertNil(ManifestTransform.choose(url: "http://o.test/x.m3u8", mode: .proxyURLs, clientHost: nil,
                                              format: .hls(hook: nil, proxyPath: nil), logger: logger),
                     "no Host to point URIs at")
    }

    /// LAN mode: every proxy URL written carries the signature of its origin
    /// (the proxy's path maker signs; see AccessPolicy.signedPath).
    func testLANModeSignsEveryProxyURL() throws {
        let signer = URLSigner(key: Array(repeating: 3, count: 32))
        let t = ManifestTransform(url: base + "index.m3u8", mode: .proxyURLs, proxyHost: proxyHost,
                                  format: .hls(hook: nil, proxyPath: {
                                      ProxyURL.path(forOrigin: $0, signature: signer.signature(forOrigin: $0))
                                  }), logger: logger)
        let output = try run(t, mediaPlaylist)
        var uris = 0
        for line in output.split(separator: "\n") {
            for uri in line.split(separator: "\"").map(String.init) + [String(line)] where uri.hasPrefix("http://" + proxyHost) {
                let target = String(uri.dropFirst(("http://" + proxyHost).count))
                let origin = try XCTUnwrap(ProxyURL.origin(fromTarget: target))
                let signature = try XCTUnwrap(ProxyURL.signature(fromTarget: target), uri)
                XCTAssertTrue(signer.isValid(signature: signature.utf8, forOrigin: origin), uri)
                uris += 1
            }
        }
        XCTAssertGreaterThan(uris, 8)
    }

    func testOutputDropsTheETag() {
        let info = BodyTransform.rewriteManifest(transform(.proxyURLs)).outputInfo(ContentInfo(totalLength: 10, contentType: "application/x-mpegurl", etag: "\"e\"", lastModified: "x"))
        XCTAssertNil(info.etag)
        XCTAssertEqual(info.contentType, "application/x-mpegurl")
    }
}
