import CacheHTTP
import XCTest

/// Rewrites a playlist given as text, recording every call of the mapping.
private func rewrite(
    _ text: String, base: String = "https://cdn.example.com/live/v1/master.m3u8?token=abc",
    _ map: (String, HLSURIKind) -> String? = { "PX/\($1)/\($0)" }
) throws -> (text: String, calls: [String]) {
    var calls: [String] = []
    let out = try HLS.rewrite(Array(text.utf8), playlistURL: base) { uri, kind in
        calls.append("\(kind) \(uri)")
        return map(uri, kind)
    }
    return (String(decoding: out, as: UTF8.self), calls)
}

private func rewriteError(_ text: String, base: String = "http://h/p.m3u8",
                          _ map: (String, HLSURIKind) -> String? = { "PX/" + $0 + "/\($1)" }) -> HLSError? {
    do {
        _ = try HLS.rewrite(Array(text.utf8), playlistURL: base, map: map)
        return nil
    } catch {
        return error
    }
}

final class HLSRewriteTests: XCTestCase {
    /// Every URI-bearing tag, URI lines of both kinds, relative and absolute
    /// references, and things that must not move.
    func testEveryURIBearingTag() throws {
        let input = """
        #EXTM3U
        #EXT-X-VERSION:9
        #EXT-X-CONTENT-STEERING:SERVER-URI="/steer?video=1",PATHWAY-ID="CDN-A"
        #EXT-X-SESSION-DATA:DATA-ID="com.example.lyrics",URI="lyrics.json"
        #EXT-X-SESSION-KEY:METHOD=SAMPLE-AES,URI="skd://key-id-1",KEYFORMAT="com.apple.streamingkeydelivery"
        #EXT-X-SESSION-KEY:METHOD=AES-128,URI="../keys/session.key"
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English, main=1",DEFAULT=YES,URI="audio/en.m3u8"
        #EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc",NAME="CC1",INSTREAM-ID="CC1"
        #EXT-X-STREAM-INF:BANDWIDTH=1280000,CODECS="avc1.4d401f,mp4a.40.2",AUDIO="aud"
        low/index.m3u8
        #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=86000,URI="low/iframe.m3u8"
        #EXT-X-KEY:METHOD=AES-128,URI="https://keys.example.com/k1?id=1",IV=0x0000000000000000000000000000000A
        #EXT-X-MAP:URI="init.mp4",BYTERANGE="720@0"
        #EXTINF:4.0,
        seg1.ts
        #EXTINF:4.0,title, with comma
        ../a/b.ts
        #EXTINF:4.0,
        /abs/path.ts
        #EXTINF:4.0,
        ?q=1
        #EXTINF:4.0,
        //other.host/x.ts
        #EXTINF:4.0,
        http://Other.Example:8080/y.ts?sig=a%2Fb
        #EXT-X-DATERANGE:ID="ad1",CLASS="com.apple.hls.interstitial",START-DATE="2020-01-01T00:00:00Z",X-ASSET-URI="ads/ad1.m3u8?x=1",X-ASSET-LIST="ads/list.json"
        #EXT-X-PART:DURATION=1.0,URI="part1.mp4",INDEPENDENT=YES
        #EXT-X-PRELOAD-HINT:TYPE=PART,URI="part2.mp4"
        #EXT-X-RENDITION-REPORT:URI="../v2/index.m3u8",LAST-MSN=10
        #EXT-X-KEY:METHOD=SAMPLE-AES,URI="data:text/plain;base64,AAAA",KEYFORMAT="x"
        # a comment with URI="not-me.ts"
        #EXT-UNKNOWN:URI="unknown.ts"
        #EXT-X-UNKNOWN:URI="unknown2.ts",X="unterminated

        """
        let expected = """
        #EXTM3U
        #EXT-X-VERSION:9
        #EXT-X-CONTENT-STEERING:SERVER-URI="PX/steeringManifest/https://cdn.example.com/steer?video=1",PATHWAY-ID="CDN-A"
        #EXT-X-SESSION-DATA:DATA-ID="com.example.lyrics",URI="PX/sessionData/https://cdn.example.com/live/v1/lyrics.json"
        #EXT-X-SESSION-KEY:METHOD=SAMPLE-AES,URI="skd://key-id-1",KEYFORMAT="com.apple.streamingkeydelivery"
        #EXT-X-SESSION-KEY:METHOD=AES-128,URI="PX/sessionKey/https://cdn.example.com/live/keys/session.key"
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English, main=1",DEFAULT=YES,URI="PX/rendition/https://cdn.example.com/live/v1/audio/en.m3u8"
        #EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc",NAME="CC1",INSTREAM-ID="CC1"
        #EXT-X-STREAM-INF:BANDWIDTH=1280000,CODECS="avc1.4d401f,mp4a.40.2",AUDIO="aud"
        PX/variant/https://cdn.example.com/live/v1/low/index.m3u8
        #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=86000,URI="PX/iFrameStream/https://cdn.example.com/live/v1/low/iframe.m3u8"
        #EXT-X-KEY:METHOD=AES-128,URI="PX/key/https://keys.example.com/k1?id=1",IV=0x0000000000000000000000000000000A
        #EXT-X-MAP:URI="PX/map/https://cdn.example.com/live/v1/init.mp4",BYTERANGE="720@0"
        #EXTINF:4.0,
        PX/segment/https://cdn.example.com/live/v1/seg1.ts
        #EXTINF:4.0,title, with comma
        PX/segment/https://cdn.example.com/live/a/b.ts
        #EXTINF:4.0,
        PX/segment/https://cdn.example.com/abs/path.ts
        #EXTINF:4.0,
        PX/segment/https://cdn.example.com/live/v1/master.m3u8?q=1
        #EXTINF:4.0,
        PX/segment/https://other.host/x.ts
        #EXTINF:4.0,
        PX/segment/http://other.example:8080/y.ts?sig=a%2Fb
        #EXT-X-DATERANGE:ID="ad1",CLASS="com.apple.hls.interstitial",START-DATE="2020-01-01T00:00:00Z",X-ASSET-URI="PX/interstitialAsset/https://cdn.example.com/live/v1/ads/ad1.m3u8?x=1",X-ASSET-LIST="PX/interstitialAssetList/https://cdn.example.com/live/v1/ads/list.json"
        #EXT-X-PART:DURATION=1.0,URI="PX/part/https://cdn.example.com/live/v1/part1.mp4",INDEPENDENT=YES
        #EXT-X-PRELOAD-HINT:TYPE=PART,URI="PX/preloadHint/https://cdn.example.com/live/v1/part2.mp4"
        #EXT-X-RENDITION-REPORT:URI="PX/renditionReport/https://cdn.example.com/live/v2/index.m3u8",LAST-MSN=10
        #EXT-X-KEY:METHOD=SAMPLE-AES,URI="data:text/plain;base64,AAAA",KEYFORMAT="x"
        # a comment with URI="not-me.ts"
        #EXT-UNKNOWN:URI="unknown.ts"
        #EXT-X-UNKNOWN:URI="unknown2.ts",X="unterminated

        """
        let (out, calls) = try rewrite(input)
        XCTAssertEqual(out, expected)
        XCTAssertEqual(calls, [
            "steeringManifest https://cdn.example.com/steer?video=1",
            "sessionData https://cdn.example.com/live/v1/lyrics.json",
            "sessionKey https://cdn.example.com/live/keys/session.key",
            "rendition https://cdn.example.com/live/v1/audio/en.m3u8",
            "variant https://cdn.example.com/live/v1/low/index.m3u8",
            "iFrameStream https://cdn.example.com/live/v1/low/iframe.m3u8",
            "key https://keys.example.com/k1?id=1",
            "map https://cdn.example.com/live/v1/init.mp4",
            "segment https://cdn.example.com/live/v1/seg1.ts",
            "segment https://cdn.example.com/live/a/b.ts",
            "segment https://cdn.example.com/abs/path.ts",
            "segment https://cdn.example.com/live/v1/master.m3u8?q=1",
            "segment https://other.host/x.ts",
            "segment http://other.example:8080/y.ts?sig=a%2Fb",
            "interstitialAsset https://cdn.example.com/live/v1/ads/ad1.m3u8?x=1",
            "interstitialAssetList https://cdn.example.com/live/v1/ads/list.json",
            "part https://cdn.example.com/live/v1/part1.mp4",
            "preloadHint https://cdn.example.com/live/v1/part2.mp4",
            "renditionReport https://cdn.example.com/live/v2/index.m3u8",
        ])
        // Every kind but segment-less ones appears, so no tag was forgotten.
        let kinds = Set(calls.map { $0.prefix { $0 != " " } })
        XCTAssertEqual(kinds, Set(HLSURIKind.allCases.map { "\($0)"[...] }))

        // Mapping to nil leaves the bytes exactly as they were.
        let (same, sameCalls) = try rewrite(input) { _, _ in nil }
        XCTAssertEqual(same, input)
        XCTAssertEqual(sameCalls.count, calls.count)
    }

    func testReferenceResolution() throws {
        // reference as written, absolute URI handed to the mapping (nil: not handed, kept)
        let cases: [(String, String?)] = [
            ("seg1.ts", "https://cdn.example.com/live/v1/seg1.ts"),
            ("./seg1.ts", "https://cdn.example.com/live/v1/seg1.ts"),
            ("../a/b.ts", "https://cdn.example.com/live/a/b.ts"),
            ("../../../../x.ts", "https://cdn.example.com/x.ts"),
            ("a/./b/../c.ts", "https://cdn.example.com/live/v1/a/c.ts"),
            ("/abs/path.ts", "https://cdn.example.com/abs/path.ts"),
            ("/abs/path.ts?x=1&y=2", "https://cdn.example.com/abs/path.ts?x=1&y=2"),
            ("?q=1", "https://cdn.example.com/live/v1/master.m3u8?q=1"),
            ("seg.ts?", "https://cdn.example.com/live/v1/seg.ts?"),
            ("seg.ts#t=10", "https://cdn.example.com/live/v1/seg.ts"),
            ("//other.host/x.ts", "https://other.host/x.ts"),
            ("//other.host:8443/x.ts?k=v", "https://other.host:8443/x.ts?k=v"),
            ("http://a.example/x.ts", "http://a.example/x.ts"),
            ("HTTPS://A.Example:443/X.ts", "https://a.example/X.ts"),
            ("https://[::1]:8080/x.ts", "https://[::1]:8080/x.ts"),
            ("seg%201.ts", "https://cdn.example.com/live/v1/seg%201.ts"),
            ("caf\u{E9}.ts", "https://cdn.example.com/live/v1/caf\u{E9}.ts"),
            ("skd://key-id", nil),
            ("SKD://key-id", nil),
            ("data:application/octet-stream;base64,AAAA", nil),
            ("ftp://example.com/x.ts", nil),
            ("urn:uuid:1234", nil),
            ("mailto:a@b", nil),
            ("seg 1.ts", nil),
            ("http://user@host/x.ts", nil),
            ("//user@host/x.ts", nil),
            ("http://", nil),
            // EXT-X-DEFINE variables are substituted by the client, not here.
            ("{$cdn}/seg.ts", nil),
            ("https://{$host}/seg.ts", nil),
            ("seg.ts?token={$token}", nil),
            ("seg{.ts", "https://cdn.example.com/live/v1/seg{.ts"),
            ("seg$.ts", "https://cdn.example.com/live/v1/seg$.ts"),
        ]
        for (reference, absolute) in cases {
            for quoted in [false, true] {
                let line = quoted ? "#EXT-X-MAP:URI=\"\(reference)\"" : reference
                let input = "#EXTM3U\n#EXTINF:4,\n\(line)\n"
                let (out, calls) = try rewrite(input) { _, _ in "MAPPED" }
                if let absolute {
                    XCTAssertEqual(calls, ["\(quoted ? "map" : "segment") \(absolute)"], reference)
                    let mapped = quoted ? "#EXT-X-MAP:URI=\"MAPPED\"" : "MAPPED"
                    XCTAssertEqual(out, "#EXTM3U\n#EXTINF:4,\n\(mapped)\n", reference)
                } else {
                    XCTAssertEqual(calls, [], reference)
                    XCTAssertEqual(out, input, reference)
                }
            }
        }
    }

    /// The rewriter's shortcut for plain relative paths must agree with
    /// OriginURL.resolving everywhere, dotted bases included.
    func testResolutionAgreesWithOriginURL() throws {
        let bases = [
            "http://h/p.m3u8", "http://h/", "http://h", "https://H.example:8443/a/b/p.m3u8?x=1",
            "http://h/a/./b/../c/p.m3u8", "http://h/a/..", "http://h/a/b/..", "http://h/a/.", "http://[::1]:80/a/p",
            "http://h/a//b/p.m3u8", "http://h/%2e%2e/p.m3u8",
        ]
        let references = [
            "a.ts", "a/b.ts", "a.ts?x=../y", "a?./b", ".a", "..a", "...", "a./b", "a../b", "a/.../b", ".", "..",
            "./", "../", "a/.", "a/..", "a/./b", "a/../b", "..?x", ".?x", "a//b", "a?", "a#f", "a?b#c", "?", "?x",
            "/a", "//h2/a", "caf\u{E9}", "a b", "a\tb", "%2e%2e/x", "a:b", "1a:b", "a@b", "-", "~x", "x/",
        ]
        for baseURL in bases {
            let origin = try XCTUnwrap(OriginURL.parse(baseURL), baseURL)
            for reference in references {
                var seen: String?
                _ = try HLS.rewrite(Array("#EXTM3U\n\(reference)\n".utf8), playlistURL: baseURL) { uri, _ in
                    seen = uri
                    return nil
                }
                XCTAssertEqual(seen, origin.resolving(reference)?.string, "\(baseURL) + \(reference)")
            }
        }
    }

    func testBytesAroundURIsArePreserved() throws {
        // input, expected with every URI mapped to "X"
        let cases: [(String, String)] = [
            ("#EXTM3U\na.ts\nb.ts\n", "#EXTM3U\nX\nX\n"),
            ("#EXTM3U\r\na.ts\r\nb.ts\r\n", "#EXTM3U\r\nX\r\nX\r\n"),
            ("#EXTM3U\na.ts\r\nb.ts", "#EXTM3U\nX\r\nX"),
            ("#EXTM3U\r\n#EXTINF:1,\r\na.ts", "#EXTM3U\r\n#EXTINF:1,\r\nX"),
            ("#EXTM3U", "#EXTM3U"),
            ("#EXTM3U\n", "#EXTM3U\n"),
            ("#EXTM3U  \n\n\na.ts\n\n", "#EXTM3U  \n\n\nX\n\n"),
            ("\u{FEFF}#EXTM3U\na.ts\n", "\u{FEFF}#EXTM3U\nX\n"),
            ("#EXTM3U\n  a.ts \t\n", "#EXTM3U\n  X \t\n"),
            ("#EXTM3U\n#EXT-X-KEY:METHOD=AES-128, URI = \"k.bin\" ,IV=0x1\n",
             "#EXTM3U\n#EXT-X-KEY:METHOD=AES-128, URI = \"X\" ,IV=0x1\n"),
            ("#EXTM3U\n#EXT-X-KEY:IV=0x1,URI=\"k.bin\",METHOD=AES-128,\n",
             "#EXTM3U\n#EXT-X-KEY:IV=0x1,URI=\"X\",METHOD=AES-128,\n"),
            // Unquoted (out of spec) URI values are rewritten unquoted.
            ("#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=k.bin\n", "#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=X\n"),
            // Attribute names are case-sensitive; other attributes keep their URIs.
            ("#EXTM3U\n#EXT-X-MAP:uri=\"i.mp4\",X-URI=\"j.mp4\"\n", "#EXTM3U\n#EXT-X-MAP:uri=\"i.mp4\",X-URI=\"j.mp4\"\n"),
            // Quoted strings may hold commas and "=".
            ("#EXTM3U\n#EXT-X-MEDIA:NAME=\"a,URI=b\",URI=\"c=d,e.m3u8\"\n",
             "#EXTM3U\n#EXT-X-MEDIA:NAME=\"a,URI=b\",URI=\"X\"\n"),
            // A tag with no value, a lone '#', comments and unknown tags pass through.
            ("#EXTM3U\n#EXT-X-KEY\n#\n#EXTINF\n##a.ts\n#EXT-X-FOO:URI=\"f.ts\"\n",
             "#EXTM3U\n#EXT-X-KEY\n#\n#EXTINF\n##a.ts\n#EXT-X-FOO:URI=\"f.ts\"\n"),
            // A lone CR is not a line end.
            ("#EXTM3U\na.ts\rb.ts\n", "#EXTM3U\na.ts\rb.ts\n"),
            // Empty quoted URI: nothing to resolve.
            ("#EXTM3U\n#EXT-X-MAP:URI=\"\"\n", "#EXTM3U\n#EXT-X-MAP:URI=\"\"\n"),
        ]
        for (input, expected) in cases {
            let (out, _) = try rewrite(input, base: "http://h/p.m3u8") { _, _ in "X" }
            XCTAssertEqual(out, expected, input.debugDescription)
            let (same, _) = try rewrite(input, base: "http://h/p.m3u8") { _, _ in nil }
            XCTAssertEqual(same, input, input.debugDescription)
        }
    }

    func testVariantAndSegmentKinds() throws {
        let input = """
        #EXTM3U
        #EXT-X-STREAM-INF:BANDWIDTH=1
        # comment between tag and URI

        v1.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=2
        #EXT-X-UNKNOWN
        v2.m3u8
        other.ts
        """
        let (_, calls) = try rewrite(input, base: "http://h/p.m3u8")
        XCTAssertEqual(calls, ["variant http://h/v1.m3u8", "variant http://h/v2.m3u8", "segment http://h/other.ts"])
    }

    func testMalformedPlaylists() {
        let cases: [(String, HLSError)] = [
            ("", .missingHeader),
            ("\n", .missingHeader),
            ("\u{FEFF}", .missingHeader),
            ("#EXTM3", .missingHeader),
            ("#EXTM3Ufoo\n", .missingHeader),
            ("\n#EXTM3U\n", .missingHeader),
            (" #EXTM3U\n", .missingHeader),
            ("#extm3u\n", .missingHeader),
            ("<html><body>Not found</body></html>", .missingHeader),
            ("seg.ts\n#EXTM3U\n", .missingHeader),
            ("#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"k.bin\n",
             .malformedAttributes(line: 2, tag: "EXT-X-KEY", problem: .unterminatedQuote)),
            ("#EXTM3U\r\n\r\n#EXT-X-MAP:URI\r\n",
             .malformedAttributes(line: 3, tag: "EXT-X-MAP", problem: .missingEquals)),
            ("#EXTM3U\n#EXT-X-MAP:URI=\"i.mp4\",BYTERANGE\n",
             .malformedAttributes(line: 2, tag: "EXT-X-MAP", problem: .missingEquals)),
            ("#EXTM3U\n#EXT-X-MAP:URI=,BYTERANGE=\"1@0\"\n",
             .malformedAttributes(line: 2, tag: "EXT-X-MAP", problem: .missingValue)),
            ("#EXTM3U\n#EXT-X-MEDIA:URI=\"a\"b\n",
             .malformedAttributes(line: 2, tag: "EXT-X-MEDIA", problem: .textAfterQuotedString)),
            ("#EXTM3U\n#EXT-X-PART:=\"a\"\n",
             .malformedAttributes(line: 2, tag: "EXT-X-PART", problem: .emptyName)),
            ("#EXTM3U\n#EXT-X-PART:URI=\"a\",,\n",
             .malformedAttributes(line: 2, tag: "EXT-X-PART", problem: .missingEquals)),
            ("#EXTM3U\n#EXT-X-DATERANGE:ID=\"a\",X-ASSET-URI=\"b\n",
             .malformedAttributes(line: 2, tag: "EXT-X-DATERANGE", problem: .unterminatedQuote)),
        ]
        for (input, error) in cases {
            XCTAssertEqual(rewriteError(input), error, input.debugDescription)
        }
        XCTAssertEqual(rewriteError("#EXTM3U\n", base: "/relative.m3u8"), .invalidPlaylistURL("/relative.m3u8"))
        XCTAssertEqual(rewriteError("#EXTM3U\n", base: "skd://x"), .invalidPlaylistURL("skd://x"))
    }

    func testUnusableReplacements() {
        // input, replacement, error?
        let cases: [(String, String, Bool)] = [
            ("#EXTM3U\na.ts\n", "x\ny", true),
            ("#EXTM3U\na.ts\n", "x\ry", true),
            ("#EXTM3U\na.ts\n", "", true),
            ("#EXTM3U\na.ts\n", "x\"y, z", false),
            ("#EXTM3U\n#EXT-X-MAP:URI=\"a\"\n", "x\"y", true),
            ("#EXTM3U\n#EXT-X-MAP:URI=\"a\"\n", "x\ny", true),
            ("#EXTM3U\n#EXT-X-MAP:URI=\"a\"\n", "x,y z=1", false),
            ("#EXTM3U\n#EXT-X-MAP:URI=a\n", "x,y", true),
            ("#EXTM3U\n#EXT-X-MAP:URI=a\n", "x y", true),
            ("#EXTM3U\n#EXT-X-MAP:URI=a\n", "x=y", false),
        ]
        for (input, replacement, fails) in cases {
            let error = rewriteError(input) { _, _ in replacement }
            XCTAssertEqual(error, fails ? .unusableReplacement(replacement) : nil, "\(input) \(replacement)")
        }
    }

    func testBinaryAndRandomInputNeverTraps() throws {
        var rng = HLSTestRandom(seed: 42)
        let alphabet = Array("#EXT-X-KEY:URI=\",\r\n a./?%\u{0}\u{FF}".utf8) + [0xC3, 0x28, 0x80]
        for round in 0..<300 {
            let count = Int(rng.next() % 400)
            var bytes = Array("#EXTM3U\n".utf8)
            for _ in 0..<count {
                bytes.append(round % 2 == 0 ? alphabet[Int(rng.next() % UInt64(alphabet.count))]
                                            : UInt8(truncatingIfNeeded: rng.next()))
            }
            // Either an error or a rewrite; nil mapping must give back the input.
            if let same = try? HLS.rewrite(bytes, playlistURL: "http://h/a/p.m3u8", map: { _, _ in nil }) {
                XCTAssertEqual(same, bytes)
                XCTAssertNoThrow(try HLS.rewrite(bytes, playlistURL: "http://h/a/p.m3u8", map: { _, _ in "X" }))
            }
            _ = try? HLSPlaylist.parse(bytes, playlistURL: "http://h/a/p.m3u8")
            // Without the header: always refused.
            XCTAssertThrowsError(try HLS.rewrite(bytes.dropFirst(8), playlistURL: "http://h/", map: { _, _ in "X" }))
        }
    }

    func testVeryLongLines() throws {
        let long = String(repeating: "a", count: 200_000)
        let input = "#EXTM3U\n#EXT-X-MAP:URI=\"\(long).mp4\",X=\"\(long)\"\n#EXTINF:1,\(long)\n\(long).ts\n"
        let (out, calls) = try rewrite(input, base: "http://h/p.m3u8") { _, _ in "X" }
        XCTAssertEqual(out, "#EXTM3U\n#EXT-X-MAP:URI=\"X\",X=\"\(long)\"\n#EXTINF:1,\(long)\nX\n")
        XCTAssertEqual(calls, ["map http://h/\(long).mp4", "segment http://h/\(long).ts"])
    }

    func testLargePlaylist() throws {
        var input = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:7\n"
        var expected = input
        for i in 0..<10_000 {
            input += "#EXTINF:4.000,\nseg-\(i).ts?sig=\(i)\n"
            expected += "#EXTINF:4.000,\nhttp://127.0.0.1:8080/p/seg-\(i).ts?sig=\(i)\n"
        }
        input += "#EXT-X-ENDLIST\n"
        expected += "#EXT-X-ENDLIST\n"
        let (out, calls) = try rewrite(input, base: "https://cdn.example.com/vod/index.m3u8") { uri, _ in
            "http://127.0.0.1:8080/p/" + uri.dropFirst("https://cdn.example.com/vod/".count)
        }
        XCTAssertEqual(calls.count, 10_000)
        XCTAssertEqual(calls.last, "segment https://cdn.example.com/vod/seg-9999.ts?sig=9999")
        XCTAssertEqual(out, expected)

        guard case .media(let p) = try HLSPlaylist.parse(input.utf8, playlistURL: "https://cdn.example.com/vod/index.m3u8")
        else { return XCTFail("not a media playlist") }
        XCTAssertEqual(p.segments.count, 10_000)
        XCTAssertEqual(p.segments.last?.mediaSequence, 10_006)
        XCTAssertEqual(p.segments.last?.uri, "https://cdn.example.com/vod/seg-9999.ts?sig=9999")
        XCTAssertEqual(p.totalDuration, 40_000, accuracy: 0.001)
    }
}

/// A small deterministic generator, so random inputs are the same every run.
private struct HLSTestRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
