import CacheHTTP
import XCTest

final class HLSLiveTests: XCTestCase {
    func testLiveReuseIsHalfTheTargetDuration() {
        let cases: [(Int, Int)] = [(0, 0), (1, 500), (2, 1000), (6, 3000), (10, 5000), (-3, 0), (Int.max, Int.max)]
        for (target, expected) in cases {
            XCTAssertEqual(HLS.liveReuseMilliseconds(targetDuration: target), expected, "\(target)")
        }
    }

    func testMediaPlaylistLiveness() throws {
        // tags after the header, isLive
        let cases: [(String, Bool)] = [
            ("", true),
            ("#EXT-X-PLAYLIST-TYPE:EVENT\n", true),
            ("#EXT-X-PLAYLIST-TYPE:VOD\n", false),
            ("#EXT-X-ENDLIST\n", false),
            ("#EXT-X-PLAYLIST-TYPE:EVENT\n#EXT-X-ENDLIST\n", false),
            ("#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-ENDLIST\n", false),
        ]
        for (tags, live) in cases {
            let text = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n\(tags)#EXTINF:6,\na.ts\n"
            guard case .media(let p) = try HLSPlaylist.parse(text.utf8, playlistURL: "http://h/p.m3u8") else {
                return XCTFail(tags)
            }
            XCTAssertEqual(p.isLive, live, tags)
            XCTAssertEqual(p.liveReuseMilliseconds, 3000, tags)
        }
    }

    func testBlockingReloadRequests() {
        let cases: [(String, Bool)] = [
            ("/live/index.m3u8?_HLS_msn=10", true),
            ("/live/index.m3u8?_HLS_msn=10&_HLS_part=2", true),
            ("/live/index.m3u8?token=a&_HLS_part=2", true),
            ("/live/index.m3u8?_HLS_skip=YES", true),
            ("/live/index.m3u8?_HLS_skip=v2&x", true),
            ("https://cdn.example.com/live/index.m3u8?a=1&_HLS_msn", true),
            ("/live/index.m3u8?_HLS_msn=", true),
            ("/live/index.m3u8", false),
            ("/live/index.m3u8?", false),
            ("/live/index.m3u8?token=_HLS_msn", false),
            ("/live/index.m3u8?x_HLS_msn=1", false),
            ("/live/index.m3u8?_hls_msn=1", false),
            ("/live/index.m3u8?_HLS_msnx=1", false),
            ("/live/_HLS_msn/index.m3u8", false),
            ("/live/index.m3u8#?_HLS_msn=1", false),
            ("/live/index.m3u8?a=1#_HLS_msn=1", false),
            ("", false),
        ]
        for (url, expected) in cases {
            XCTAssertEqual(HLS.isBlockingReloadRequest(url), expected, url)
        }
    }
}
