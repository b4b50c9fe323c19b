@testable import CacheHTTP
import XCTest

private let base = "https://cdn.example.com/show/master.m3u8"

private func master(_ text: String) throws -> HLSMasterPlaylist {
    guard case .master(let p) = try HLSPlaylist.parse(Array(text.utf8), playlistURL: base) else {
        XCTFail("not a multivariant playlist")
        throw HLSError.missingHeader
    }
    return p
}

private let sample = """
#EXTM3U
#EXT-X-VERSION:6
#EXT-X-INDEPENDENT-SEGMENTS
#EXT-X-CONTENT-STEERING:SERVER-URI="/steering?video=00012",PATHWAY-ID="CDN-A"
#EXT-X-SESSION-KEY:METHOD=SAMPLE-AES,URI="skd://fairplay-key",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1"
#EXT-X-SESSION-DATA:DATA-ID="com.example.title",VALUE="A, B"
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,URI="audio/en.m3u8"
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="Deutsch, Stereo",LANGUAGE="de",URI="audio/de.m3u8"
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="ac3",NAME="English 5.1",URI="https://audio.example/ac3/en.m3u8"
#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",DEFAULT=NO,URI="subs/en.m3u8"
#EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc",NAME="CC1",INSTREAM-ID="CC1"
#EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="cams",NAME="Main",DEFAULT=YES
#EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="cams",NAME="Side",URI="cams/side.m3u8"
#EXT-X-STREAM-INF:BANDWIDTH=800000,AVERAGE-BANDWIDTH=700000,RESOLUTION=640x360,CODECS="avc1.4d401e,mp4a.40.2",AUDIO="aac",SUBTITLES="subs",CLOSED-CAPTIONS="cc"
v360/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=5000000,RESOLUTION=1920x1080,FRAME-RATE=29.970,CODECS="avc1.640028,ac-3",AUDIO="ac3",VIDEO="cams",CLOSED-CAPTIONS=NONE
v1080/index.m3u8?token=x
#EXT-X-STREAM-INF:BANDWIDTH=2000000,RESOLUTION=1280x720,AUDIO="aac"
//mirror.example/v720/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=2000000,RESOLUTION=1280x720,AUDIO="missing-group"
v720b/index.m3u8
#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=86000,RESOLUTION=640x360,CODECS="avc1.4d401e",URI="v360/iframes.m3u8"
#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=300000,AVERAGE-BANDWIDTH=250000,VIDEO="cams",URI="v1080/iframes.m3u8"
"""

final class HLSMasterPlaylistTests: XCTestCase {
    func testMultivariantPlaylist() throws {
        let p = try master(sample)
        let root = "https://cdn.example.com/show/"
        XCTAssertEqual(p.variants, [
            HLSVariant(uri: root + "v360/index.m3u8", bandwidth: 800_000, averageBandwidth: 700_000,
                       resolution: HLSResolution(width: 640, height: 360), codecs: "avc1.4d401e,mp4a.40.2",
                       audioGroup: "aac", subtitlesGroup: "subs", closedCaptionsGroup: "cc"),
            HLSVariant(uri: root + "v1080/index.m3u8?token=x", bandwidth: 5_000_000,
                       resolution: HLSResolution(width: 1920, height: 1080), codecs: "avc1.640028,ac-3",
                       frameRate: 29.97, audioGroup: "ac3", videoGroup: "cams"),
            HLSVariant(uri: "https://mirror.example/v720/index.m3u8", bandwidth: 2_000_000,
                       resolution: HLSResolution(width: 1280, height: 720), audioGroup: "aac"),
            HLSVariant(uri: root + "v720b/index.m3u8", bandwidth: 2_000_000,
                       resolution: HLSResolution(width: 1280, height: 720), audioGroup: "missing-group"),
        ])
        XCTAssertEqual(p.iFrameStreams, [
            HLSIFrameStream(uri: root + "v360/iframes.m3u8", bandwidth: 86000,
                            resolution: HLSResolution(width: 640, height: 360), codecs: "avc1.4d401e"),
            HLSIFrameStream(uri: root + "v1080/iframes.m3u8", bandwidth: 300_000, averageBandwidth: 250_000,
                            videoGroup: "cams"),
        ])
        XCTAssertEqual(p.renditions.count, 7)
        XCTAssertEqual(p.renditions[0], HLSRendition(type: .audio, groupID: "aac", name: "English", language: "en",
                                                     uri: root + "audio/en.m3u8", isDefault: true, autoselect: true))
        XCTAssertEqual(p.renditions[1].name, "Deutsch, Stereo")
        XCTAssertEqual(p.renditions.map(\.type), [.audio, .audio, .audio, .subtitles, .closedCaptions, .video, .video])
        XCTAssertEqual(p.renditions.map(\.uri), [root + "audio/en.m3u8", root + "audio/de.m3u8",
                                                 "https://audio.example/ac3/en.m3u8", root + "subs/en.m3u8",
                                                 nil, nil, root + "cams/side.m3u8"])
        XCTAssertEqual(p.renditions.map(\.isDefault), [true, false, false, false, false, true, false])
        XCTAssertEqual(p.sessionKeys, [HLSKey(method: .sampleAES, uri: "skd://fairplay-key",
                                              keyFormat: "com.apple.streamingkeydelivery", keyFormatVersions: "1")])
        XCTAssertEqual(p.contentSteering, HLSContentSteering(serverURI: "https://cdn.example.com/steering?video=00012",
                                                             pathwayID: "CDN-A"))
    }

    func testPlaylistKindAccessors() throws {
        let m = try HLSPlaylist.parse(Array(sample.utf8), playlistURL: base)
        XCTAssertEqual(m.master?.variants.count, 4)
        XCTAssertNil(m.media)
        let d = try HLSPlaylist.parse(Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n".utf8), playlistURL: base)
        XCTAssertEqual(d.media?.targetDuration, 2)
        XCTAssertEqual(d.media?.segments, [])
        XCTAssertNil(d.master)
    }

    func testVariantSelection() throws {
        let p = try master(sample)
        // preference, URI path of the expected variant (after the host)
        let cases: [(HLSVariantPreference, String)] = [
            (.highest, "v1080/index.m3u8?token=x"),
            (.lowest, "v360/index.m3u8"),
            (.closest(toBandwidth: 5_000_000), "v1080/index.m3u8?token=x"),
            (.closest(toBandwidth: 4_999_999), "v720/index.m3u8"), // first of the two at 2 Mbit/s
            (.closest(toBandwidth: 2_000_000), "v720/index.m3u8"),
            (.closest(toBandwidth: 1_999_999), "v360/index.m3u8"),
            (.closest(toBandwidth: 800_000), "v360/index.m3u8"),
            (.closest(toBandwidth: 799_999), "v360/index.m3u8"), // all above: the lowest
            (.closest(toBandwidth: 0), "v360/index.m3u8"),
            (.closest(toBandwidth: Int.max), "v1080/index.m3u8?token=x"),
        ]
        for (preference, expected) in cases {
            XCTAssertEqual(p.variant(preference)?.uri.hasSuffix("/" + expected), true, "\(preference)")
            XCTAssertEqual(p.variant(preference)?.uri.contains("v720b"), false, "\(preference)")
        }
        XCTAssertNil(HLSMasterPlaylist().variant(.highest))
        XCTAssertNil(HLSMasterPlaylist().variant(.closest(toBandwidth: 1)))

        // Ties keep playlist order for highest and lowest too.
        let tied = HLSMasterPlaylist(variants: [HLSVariant(uri: "a", bandwidth: 5), HLSVariant(uri: "b", bandwidth: 5)])
        XCTAssertEqual(tied.variant(.highest)?.uri, "a")
        XCTAssertEqual(tied.variant(.lowest)?.uri, "a")
        XCTAssertEqual(tied.variant(.closest(toBandwidth: 1))?.uri, "a")
    }

    func testRenditionsOfAVariant() throws {
        let p = try master(sample)
        // variant index, names of the renditions that go with it
        let cases: [(Int, [String])] = [
            (0, ["English", "Deutsch, Stereo", "English"]),  // aac audio + subs; closed captions are in-band
            (1, ["English 5.1", "Main", "Side"]),             // ac3 audio + cams video
            (2, ["English", "Deutsch, Stereo"]),
            (3, []),                                          // a group nobody declared
        ]
        for (index, names) in cases {
            XCTAssertEqual(p.renditions(for: p.variants[index]).map(\.name), names, "\(index)")
        }
        let forLow = p.renditions(for: p.variants[0])
        XCTAssertEqual(forLow.map(\.type), [.audio, .audio, .subtitles])
        XCTAssertEqual(p.renditions(for: p.variants[1]).compactMap(\.uri),
                       ["https://audio.example/ac3/en.m3u8", "https://cdn.example.com/show/cams/side.m3u8"])
    }

    func testMultivariantErrors() {
        let cases: [(String, HLSError)] = [
            ("#EXT-X-STREAM-INF:RESOLUTION=1x1\nv.m3u8\n",
             .missingAttribute(line: 2, tag: "EXT-X-STREAM-INF", attribute: "BANDWIDTH")),
            ("#EXT-X-STREAM-INF:BANDWIDTH=high\nv.m3u8\n",
             .invalidValue(line: 2, tag: "EXT-X-STREAM-INF", attribute: "BANDWIDTH")),
            ("#EXT-X-STREAM-INF:BANDWIDTH=1,RESOLUTION=1920\nv.m3u8\n",
             .invalidValue(line: 2, tag: "EXT-X-STREAM-INF", attribute: "RESOLUTION")),
            ("#EXT-X-STREAM-INF:BANDWIDTH=1,RESOLUTION=x1\nv.m3u8\n",
             .invalidValue(line: 2, tag: "EXT-X-STREAM-INF", attribute: "RESOLUTION")),
            ("#EXT-X-STREAM-INF:BANDWIDTH=1,FRAME-RATE=fast\nv.m3u8\n",
             .invalidValue(line: 2, tag: "EXT-X-STREAM-INF", attribute: "FRAME-RATE")),
            ("#EXT-X-STREAM-INF:BANDWIDTH=1\n", .missingURI(line: 2)),
            ("#EXT-X-STREAM-INF:BANDWIDTH=1\n#EXT-X-STREAM-INF:BANDWIDTH=2\nv.m3u8\n", .missingURI(line: 2)),
            ("#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS=\"a,b\nv.m3u8\n",
             .malformedAttributes(line: 2, tag: "EXT-X-STREAM-INF", problem: .unterminatedQuote)),
            ("#EXT-X-STREAM-INF:BANDWIDTH\nv.m3u8\n",
             .malformedAttributes(line: 2, tag: "EXT-X-STREAM-INF", problem: .missingEquals)),
            ("#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=1\n",
             .missingAttribute(line: 2, tag: "EXT-X-I-FRAME-STREAM-INF", attribute: "URI")),
            ("#EXT-X-MEDIA:TYPE=AUDIO,NAME=\"n\"\n", .missingAttribute(line: 2, tag: "EXT-X-MEDIA", attribute: "GROUP-ID")),
            ("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"g\"\n", .missingAttribute(line: 2, tag: "EXT-X-MEDIA", attribute: "NAME")),
            ("#EXT-X-MEDIA:GROUP-ID=\"g\",NAME=\"n\"\n", .missingAttribute(line: 2, tag: "EXT-X-MEDIA", attribute: "TYPE")),
            ("#EXT-X-MEDIA:TYPE=MUSIC,GROUP-ID=\"g\",NAME=\"n\"\n", .invalidValue(line: 2, tag: "EXT-X-MEDIA", attribute: "TYPE")),
            ("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"g\",NAME=\"n\",DEFAULT=1\n",
             .invalidValue(line: 2, tag: "EXT-X-MEDIA", attribute: "DEFAULT")),
            ("#EXT-X-CONTENT-STEERING:PATHWAY-ID=\"a\"\n",
             .missingAttribute(line: 2, tag: "EXT-X-CONTENT-STEERING", attribute: "SERVER-URI")),
            ("#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n#EXTINF:4,\na.ts\n", .mixedPlaylist(line: 4)),
            ("#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n#EXT-X-TARGETDURATION:4\n", .mixedPlaylist(line: 4)),
            ("#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\nstray.m3u8\n",
             .invalidValue(line: 4, tag: "EXT-X-STREAM-INF", attribute: nil)),
        ]
        for (body, error) in cases {
            XCTAssertThrowsError(try HLSPlaylist.parse(Array(("#EXTM3U\n" + body).utf8), playlistURL: base), body) {
                XCTAssertEqual($0 as? HLSError, error, body)
            }
        }
        XCTAssertThrowsError(try HLSPlaylist.parse(Array("#EXTM3U\n".utf8), playlistURL: "not a url")) {
            XCTAssertEqual($0 as? HLSError, .invalidPlaylistURL("not a url"))
        }
    }
}
