import CacheHTTP
import XCTest

final class HLSDetectionTests: XCTestCase {
    func testIsPlaylistTable() {
        let header = Array("#EXTM3U\n#EXT-X-VERSION:3\n".utf8)
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF] + header
        let media: [UInt8] = [0x47, 0x40, 0x11, 0x10]
        // content type, path, body prefix, expected
        let cases: [(String?, String, [UInt8], Bool)] = [
            // HLS types win whatever the path and body.
            ("application/vnd.apple.mpegurl", "/x.bin", media, true),
            ("application/x-mpegURL", "/x", [], true),
            ("audio/mpegurl", "/x", [], true),
            ("audio/x-mpegurl", "/x", [], true),
            ("Application/VND.Apple.MpegURL; charset=utf-8", "/x", [], true),
            ("  application/vnd.apple.mpegurl ;charset=UTF-8", "/x", [], true),
            // Other specific types say no, even with a playlist path or body.
            ("video/mp2t", "/a.m3u8", header, false),
            ("text/html", "/a.m3u8", header, false),
            ("application/dash+xml", "/a.mpd", [], false),
            ("video/mp4", "/a.mp4", media, false),
            // Generic or absent types: path or body decide.
            (nil, "/live/index.m3u8", [], true),
            (nil, "/live/INDEX.M3U8", [], true),
            (nil, "/radio.m3u", [], true),
            (nil, "/live/index.m3u8?token=a.ts", [], true),
            (nil, "https://cdn.example.com/a/b.m3u8#frag", [], true),
            (nil, "/live/index.ts?name=x.m3u8", [], false),
            (nil, "/live/m3u8", [], false),
            (nil, "/live/index.m3u8x", [], false),
            (nil, "/seg.ts", media, false),
            (nil, "/seg", header, true),
            (nil, "/seg", bom, true),
            (nil, "/seg", Array("#EXTM3".utf8), false),
            (nil, "/seg", Array(" #EXTM3U".utf8), false),
            (nil, "/seg", [], false),
            ("", "/a.m3u8", [], true),
            ("application/octet-stream", "/a.m3u8", [], true),
            ("application/octet-stream", "/a", header, true),
            ("binary/octet-stream", "/a", header, true),
            ("text/plain; charset=utf-8", "/a", bom, true),
            ("TEXT/PLAIN", "/a.M3U", [], true),
            ("application/octet-stream", "/a.bin", media, false),
            ("text/plain", "/readme.txt", Array("hello".utf8), false),
        ]
        for (type, path, body, expected) in cases {
            XCTAssertEqual(HLS.isPlaylist(contentType: type, path: path, bodyPrefix: body), expected,
                           "\(type ?? "nil") \(path) \(body.prefix(8))")
        }
    }

    func testBodyPrefixOfAnyCollection() {
        let text = "#EXTM3U\n"
        XCTAssertTrue(HLS.isPlaylist(contentType: nil, path: "/x", bodyPrefix: text.utf8))
        XCTAssertTrue(HLS.isPlaylist(contentType: nil, path: "/x", bodyPrefix: Array(text.utf8)[...]))
        XCTAssertTrue(HLS.startsWithPlaylistHeader(ContiguousArray(text.utf8)))
        XCTAssertFalse(HLS.startsWithPlaylistHeader([UInt8]([0xEF, 0xBB])))
    }
}
