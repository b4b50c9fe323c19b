@testable import CacheHTTP
import XCTest

private let base = "https://cdn.example.com/vod/a/index.m3u8?t=1"

private func media(_ text: String, url: String = base, file: StaticString = #filePath, line: UInt = #line) throws
    -> HLSMediaPlaylist
{
    guard case .media(let p) = try HLSPlaylist.parse(Array(text.utf8), playlistURL: url) else {
        XCTFail("not a media playlist", file: file, line: line)
        throw HLSError.missingHeader
    }
    return p
}

private func parseError(_ text: String) -> HLSError? {
    do {
        _ = try HLSPlaylist.parse(text.utf8, playlistURL: base)
        return nil
    } catch {
        return error
    }
}

final class HLSMediaPlaylistTests: XCTestCase {
    func testVODPlaylist() throws {
        let p = try media("""
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:10
        #EXT-X-MEDIA-SEQUENCE:100
        #EXT-X-DISCONTINUITY-SEQUENCE:3
        #EXT-X-PLAYLIST-TYPE:VOD
        #EXTINF:9.009,Intro
        seg0.ts
        #EXTINF:9.5,
        ../b/seg1.ts?x=1
        #EXT-X-DISCONTINUITY
        #EXTINF:3
        https://other.example/seg2.ts
        #EXT-X-GAP
        #EXTINF:4.25,
        seg3.ts
        #EXT-X-ENDLIST
        """)
        XCTAssertEqual(p.targetDuration, 10)
        XCTAssertEqual(p.mediaSequence, 100)
        XCTAssertEqual(p.discontinuitySequence, 3)
        XCTAssertEqual(p.playlistType, .vod)
        XCTAssertTrue(p.hasEndList)
        XCTAssertFalse(p.isLive)
        XCTAssertEqual(p.liveReuseMilliseconds, 5000)
        XCTAssertEqual(p.segments.map(\.uri), [
            "https://cdn.example.com/vod/a/seg0.ts", "https://cdn.example.com/vod/b/seg1.ts?x=1",
            "https://other.example/seg2.ts", "https://cdn.example.com/vod/a/seg3.ts",
        ])
        XCTAssertEqual(p.segments.map(\.duration), [9.009, 9.5, 3, 4.25])
        XCTAssertEqual(p.segments.map(\.title), ["Intro", nil, nil, nil])
        XCTAssertEqual(p.segments.map(\.mediaSequence), [100, 101, 102, 103])
        XCTAssertEqual(p.segments.map(\.discontinuity), [false, false, true, false])
        XCTAssertEqual(p.segments.map(\.isGap), [false, false, false, true])
        XCTAssertEqual(p.totalDuration, 25.759, accuracy: 1e-9)
        XCTAssertTrue(p.segments.allSatisfy { $0.byteRange == nil && $0.keys.isEmpty && $0.map == nil })
    }

    func testByteRangesWithImplicitOffsets() throws {
        // segment lines after the header, expected ranges (offset, length), or the error
        let cases: [(String, [HLSByteRange?]?, HLSError?)] = [
            ("#EXT-X-BYTERANGE:100@0\n#EXTINF:1,\na.ts\n#EXT-X-BYTERANGE:200\n#EXTINF:1,\na.ts\n"
             + "#EXTINF:1,\n#EXT-X-BYTERANGE:50\na.ts\n",
             [.init(offset: 0, length: 100), .init(offset: 100, length: 200), .init(offset: 300, length: 50)], nil),
            // Written differently, the same absolute resource.
            ("#EXT-X-BYTERANGE:10@5\n#EXTINF:1,\na.ts\n#EXT-X-BYTERANGE:10\n#EXTINF:1,\n./a.ts\n",
             [.init(offset: 5, length: 10), .init(offset: 15, length: 10)], nil),
            // An explicit offset restarts the chain anywhere.
            ("#EXT-X-BYTERANGE:10@5\n#EXTINF:1,\na.ts\n#EXT-X-BYTERANGE:7@1000\n#EXTINF:1,\na.ts\n"
             + "#EXT-X-BYTERANGE:3\n#EXTINF:1,\na.ts\n",
             [.init(offset: 5, length: 10), .init(offset: 1000, length: 7), .init(offset: 1007, length: 3)], nil),
            // A whole-resource segment in between.
            ("#EXT-X-BYTERANGE:10@0\n#EXTINF:1,\na.ts\n#EXTINF:1,\nb.ts\n#EXT-X-BYTERANGE:10@10\n#EXTINF:1,\na.ts\n",
             [.init(offset: 0, length: 10), nil, .init(offset: 10, length: 10)], nil),
            // Two resources, each with its own chain.
            ("#EXT-X-BYTERANGE:10@0\n#EXTINF:1,\na.ts\n#EXT-X-BYTERANGE:10@0\n#EXTINF:1,\nb.ts\n"
             + "#EXT-X-BYTERANGE:4\n#EXTINF:1,\nb.ts\n",
             [.init(offset: 0, length: 10), .init(offset: 0, length: 10), .init(offset: 10, length: 4)], nil),
            // Errors: no previous sub-range, another resource, a whole resource before.
            ("#EXT-X-BYTERANGE:10\n#EXTINF:1,\na.ts\n", nil, .byteRangeWithoutOffset(line: 3)),
            ("#EXT-X-BYTERANGE:10@0\n#EXTINF:1,\na.ts\n#EXT-X-BYTERANGE:10\n#EXTINF:1,\nb.ts\n",
             nil, .byteRangeWithoutOffset(line: 6)),
            ("#EXTINF:1,\na.ts\n#EXT-X-BYTERANGE:10\n#EXTINF:1,\na.ts\n", nil, .byteRangeWithoutOffset(line: 5)),
            ("#EXT-X-BYTERANGE:x@0\n#EXTINF:1,\na.ts\n", nil, .invalidValue(line: 3, tag: "EXT-X-BYTERANGE", attribute: nil)),
            ("#EXT-X-BYTERANGE:10@\n#EXTINF:1,\na.ts\n", nil, .invalidValue(line: 3, tag: "EXT-X-BYTERANGE", attribute: nil)),
            ("#EXT-X-BYTERANGE:-1@0\n#EXTINF:1,\na.ts\n", nil, .invalidValue(line: 3, tag: "EXT-X-BYTERANGE", attribute: nil)),
            ("#EXT-X-BYTERANGE:\n#EXTINF:1,\na.ts\n", nil, .invalidValue(line: 3, tag: "EXT-X-BYTERANGE", attribute: nil)),
            ("#EXT-X-BYTERANGE:9223372036854775807@1\n#EXTINF:1,\na.ts\n", nil,
             .invalidValue(line: 3, tag: "EXT-X-BYTERANGE", attribute: nil)),
            ("#EXT-X-BYTERANGE:9223372036854775807@0\n#EXTINF:1,\na.ts\n#EXT-X-BYTERANGE:1\n#EXTINF:1,\na.ts\n", nil,
             .byteRangeWithoutOffset(line: 6)),
        ]
        for (body, ranges, error) in cases {
            let text = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n" + body
            if let ranges {
                XCTAssertEqual(try media(text).segments.map(\.byteRange), ranges, body)
            } else {
                XCTAssertEqual(parseError(text), error, body)
            }
        }
        // The half-open range for a Range header.
        XCTAssertEqual(HLSByteRange(offset: 100, length: 200).range, 100..<300)
    }

    func testKeysAndMapsInEffect() throws {
        let p = try media("""
        #EXTM3U
        #EXT-X-TARGETDURATION:4
        #EXT-X-MEDIA-SEQUENCE:7
        #EXTINF:4,
        clear0.ts
        #EXT-X-KEY:METHOD=AES-128,URI="keys/k1.bin"
        #EXT-X-MAP:URI="init1.mp4"
        #EXTINF:4,
        enc1.ts
        #EXTINF:4,
        enc2.ts
        #EXT-X-KEY:METHOD=AES-128,URI="https://keys.example/k2?id=2",IV=0X000102030405060708090a0B0c0D0e0F
        #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://asset-2",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1"
        #EXT-X-MAP:URI="init2.mp4",BYTERANGE="720@16"
        #EXTINF:4,
        enc3.ts
        #EXT-X-KEY:METHOD=AES-128,URI="k3.bin",IV=0x1F
        #EXTINF:4,
        enc4.ts
        #EXT-X-KEY:METHOD=NONE
        #EXT-X-MAP:URI="init3.mp4",BYTERANGE="100"
        #EXTINF:4,
        clear5.ts
        #EXT-X-KEY:METHOD=SAMPLE-AES-CTR,URI="data:text/plain;base64,AAAA",KEYFORMAT="urn:uuid:edef8ba9"
        #EXTINF:4,
        enc6.ts
        """)
        let root = "https://cdn.example.com/vod/a/"
        XCTAssertEqual(p.segments.map(\.key?.method), [nil, .aes128, .aes128, .aes128, .aes128, HLSKeyMethod.none, .sampleAESCTR])
        XCTAssertEqual(p.segments.map(\.key?.uri), [nil, root + "keys/k1.bin", root + "keys/k1.bin",
                                                    "https://keys.example/k2?id=2", root + "k3.bin", nil,
                                                    "data:text/plain;base64,AAAA"])
        XCTAssertEqual(p.segments.map(\.isEncrypted), [false, true, true, true, true, false, true])
        XCTAssertEqual(p.segments.map(\.keys.count), [0, 1, 1, 2, 2, 1, 1])
        // The FairPlay key stays next to the identity key until METHOD=NONE.
        XCTAssertEqual(p.segments[3].keys.map(\.keyFormat), ["identity", "com.apple.streamingkeydelivery"])
        XCTAssertEqual(p.segments[4].keys.map(\.keyFormat), ["com.apple.streamingkeydelivery", "identity"])
        XCTAssertEqual(p.segments[4].keys[0].uri, "skd://asset-2")
        XCTAssertEqual(p.segments[4].keys[0].keyFormatVersions, "1")
        XCTAssertEqual(p.segments[6].key?.keyFormat, "urn:uuid:edef8ba9")
        // IVs: given (any case, short values padded on the left), else the media sequence number.
        XCTAssertEqual(p.segments[3].key?.iv, Array(0...15))
        XCTAssertEqual(p.segments[4].key?.iv, [UInt8](repeating: 0, count: 15) + [0x1F])
        XCTAssertNil(p.segments[1].key?.iv)
        XCTAssertEqual(p.segments[1].key?.iv(forMediaSequence: p.segments[1].mediaSequence),
                       [UInt8](repeating: 0, count: 15) + [8])
        XCTAssertEqual(p.segments[3].key?.iv(forMediaSequence: 99), Array(0...15))
        XCTAssertEqual(HLSKey(method: .aes128).iv(forMediaSequence: 0x0102_0304_0506_0708),
                       [UInt8](repeating: 0, count: 8) + [1, 2, 3, 4, 5, 6, 7, 8])
        // Maps.
        XCTAssertEqual(p.segments.map(\.map?.uri), [nil, root + "init1.mp4", root + "init1.mp4", root + "init2.mp4",
                                                    root + "init2.mp4", root + "init3.mp4", root + "init3.mp4"])
        XCTAssertEqual(p.segments.map(\.map?.byteRange), [nil, nil, nil, .init(offset: 16, length: 720),
                                                          .init(offset: 16, length: 720), .init(offset: 0, length: 100),
                                                          .init(offset: 0, length: 100)])
    }

    func testLowLatencyPartsAndHints() throws {
        let p = try media("""
        #EXTM3U
        #EXT-X-TARGETDURATION:4
        #EXT-X-PART-INF:PART-TARGET=1.002
        #EXT-X-MEDIA-SEQUENCE:20
        #EXT-X-SKIP:SKIPPED-SEGMENTS=3
        #EXT-X-PART:DURATION=1.0,URI="s20.mp4",BYTERANGE="1000@0",INDEPENDENT=YES
        #EXT-X-PART:DURATION=1.0,URI="s20.mp4",BYTERANGE="500"
        #EXTINF:2.0,
        s20.mp4
        #EXT-X-PART:DURATION=1.002,URI="p21.0.mp4"
        #EXT-X-PART:DURATION=0.5,URI="p21.1.mp4",GAP=YES
        #EXT-X-PRELOAD-HINT:TYPE=PART,URI="p21.2.mp4"
        #EXT-X-PRELOAD-HINT:TYPE=MAP,URI="init.mp4",BYTERANGE-START=10,BYTERANGE-LENGTH=90
        #EXT-X-PRELOAD-HINT:TYPE=FUTURE,URI="x"
        #EXT-X-RENDITION-REPORT:URI="../b/index.m3u8",LAST-MSN=24,LAST-PART=1
        """)
        XCTAssertEqual(p.partTargetDuration, 1.002)
        XCTAssertTrue(p.isLive)
        XCTAssertEqual(p.segments.count, 1)
        XCTAssertEqual(p.segments[0].mediaSequence, 23)
        let root = "https://cdn.example.com/vod/a/"
        XCTAssertEqual(p.segments[0].parts, [
            HLSPart(uri: root + "s20.mp4", duration: 1, byteRange: .init(offset: 0, length: 1000), isIndependent: true, isGap: false),
            HLSPart(uri: root + "s20.mp4", duration: 1, byteRange: .init(offset: 1000, length: 500), isIndependent: false, isGap: false),
        ])
        XCTAssertEqual(p.trailingParts, [
            HLSPart(uri: root + "p21.0.mp4", duration: 1.002, byteRange: nil, isIndependent: false, isGap: false),
            HLSPart(uri: root + "p21.1.mp4", duration: 0.5, byteRange: nil, isIndependent: false, isGap: true),
        ])
        XCTAssertEqual(p.preloadHints, [
            HLSPreloadHint(type: .part, uri: root + "p21.2.mp4", byteRangeStart: 0, byteRangeLength: nil),
            HLSPreloadHint(type: .map, uri: root + "init.mp4", byteRangeStart: 10, byteRangeLength: 90),
            HLSPreloadHint(type: .other("FUTURE"), uri: root + "x", byteRangeStart: 0, byteRangeLength: nil),
        ])
        // A part without offset after a part of another resource.
        let bad = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-PART:DURATION=1,URI=\"a\",BYTERANGE=\"1@0\"\n"
            + "#EXT-X-PART:DURATION=1,URI=\"b\",BYTERANGE=\"1\"\n"
        XCTAssertEqual(parseError(bad), .byteRangeWithoutOffset(line: 4))
    }

    func testMediaPlaylistErrors() {
        let head = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n"
        let cases: [(String, HLSError)] = [
            ("", .missingHeader),
            ("#EXTM3U\n", .missingTargetDuration),
            ("#EXTM3U\n#EXTINF:4,\na.ts\n", .missingTargetDuration),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:x\n", .invalidValue(line: 2, tag: "EXT-X-TARGETDURATION", attribute: nil)),
            ("#EXTM3U\n#EXT-X-TARGETDURATION\n", .invalidValue(line: 2, tag: "EXT-X-TARGETDURATION", attribute: nil)),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:99999999999999999999\n",
             .invalidValue(line: 2, tag: "EXT-X-TARGETDURATION", attribute: nil)),
            (head + "#EXT-X-MEDIA-SEQUENCE:-1\n", .invalidValue(line: 3, tag: "EXT-X-MEDIA-SEQUENCE", attribute: nil)),
            (head + "#EXT-X-PLAYLIST-TYPE:LIVE\n", .invalidValue(line: 3, tag: "EXT-X-PLAYLIST-TYPE", attribute: nil)),
            (head + "#EXTINF:abc,\na.ts\n", .invalidValue(line: 3, tag: "EXTINF", attribute: nil)),
            (head + "#EXTINF:inf,\na.ts\n", .invalidValue(line: 3, tag: "EXTINF", attribute: nil)),
            (head + "#EXTINF:1.2.3,\na.ts\n", .invalidValue(line: 3, tag: "EXTINF", attribute: nil)),
            (head + "#EXTINF:,\na.ts\n", .invalidValue(line: 3, tag: "EXTINF", attribute: nil)),
            (head + "#EXTINF:4,\n", .missingURI(line: 3)),
            (head + "#EXTINF:4,\n#EXTINF:4,\na.ts\n", .missingURI(line: 3)),
            (head + "a.ts\n", .invalidValue(line: 3, tag: "EXTINF", attribute: nil)),
            (head + "#EXT-X-KEY:URI=\"k\"\n", .missingAttribute(line: 3, tag: "EXT-X-KEY", attribute: "METHOD")),
            (head + "#EXT-X-KEY:METHOD=AES-128\n", .missingAttribute(line: 3, tag: "EXT-X-KEY", attribute: "URI")),
            (head + "#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0x\n", .invalidValue(line: 3, tag: "EXT-X-KEY", attribute: "IV")),
            (head + "#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=12\n", .invalidValue(line: 3, tag: "EXT-X-KEY", attribute: "IV")),
            (head + "#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0xZZ\n", .invalidValue(line: 3, tag: "EXT-X-KEY", attribute: "IV")),
            (head + "#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0x" + String(repeating: "0", count: 33) + "\n",
             .invalidValue(line: 3, tag: "EXT-X-KEY", attribute: "IV")),
            (head + "#EXT-X-KEY:METHOD=AES-128,URI=\"k\n",
             .malformedAttributes(line: 3, tag: "EXT-X-KEY", problem: .unterminatedQuote)),
            (head + "#EXT-X-MAP:BYTERANGE=\"1@0\"\n", .missingAttribute(line: 3, tag: "EXT-X-MAP", attribute: "URI")),
            (head + "#EXT-X-MAP:URI=\"i\",BYTERANGE=\"a@0\"\n",
             .invalidValue(line: 3, tag: "EXT-X-MAP", attribute: "BYTERANGE")),
            (head + "#EXT-X-PART:URI=\"p\"\n", .missingAttribute(line: 3, tag: "EXT-X-PART", attribute: "DURATION")),
            (head + "#EXT-X-PART:URI=\"p\",DURATION=1,INDEPENDENT=yes\n",
             .invalidValue(line: 3, tag: "EXT-X-PART", attribute: "INDEPENDENT")),
            (head + "#EXT-X-PRELOAD-HINT:URI=\"p\"\n", .missingAttribute(line: 3, tag: "EXT-X-PRELOAD-HINT", attribute: "TYPE")),
            (head + "#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n", .mixedPlaylist(line: 3)),
            ("#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"n\"\n#EXTINF:4,\na.ts\n", .mixedPlaylist(line: 3)),
        ]
        for (text, error) in cases {
            XCTAssertEqual(parseError(text), error, text)
        }
    }

    func testLenientSyntaxAndUnknownTags() throws {
        let p = try media("""
        \u{FEFF}#EXTM3U\r
        #EXT-X-TARGETDURATION:6\r
        #EXT-X-UNKNOWN:FOO="unterminated\r
        # comment\r
        \r
        #EXT-X-KEY:METHOD=AES-128, URI="k.bin", IV=0x01\r
        #EXTINF:6.000 ,title\r
          seg.ts  \r
        #EXT-X-PROGRAM-DATE-TIME:2020-01-01T00:00:00Z\r
        #EXTINF:6,\r
        skd://not-http\r
        """)
        XCTAssertEqual(p.segments.map(\.uri), ["https://cdn.example.com/vod/a/seg.ts", "skd://not-http"])
        XCTAssertEqual(p.segments.map(\.duration), [6, 6])
        XCTAssertEqual(p.segments[0].title, "title")
        XCTAssertEqual(p.segments[0].key?.uri, "https://cdn.example.com/vod/a/k.bin")
    }
}
