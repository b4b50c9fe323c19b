import CacheHTTP
@testable import CacheLoading
import XCTest

/// The preload walk as a value: events in, fetches out, no sockets.
final class PreloadWalkerTests: XCTestCase {
    let master = """
    #EXTM3U
    #EXT-X-SESSION-KEY:METHOD=AES-128,URI="https://keys.test/session.key"
    #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="en",URI="audio/en.m3u8"
    #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="other",NAME="fr",URI="audio/fr.m3u8"
    #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="en",URI="subs/en.m3u8"
    #EXT-X-STREAM-INF:BANDWIDTH=800000,AUDIO="aud",SUBTITLES="subs"
    low/index.m3u8
    #EXT-X-STREAM-INF:BANDWIDTH=2000000,AUDIO="aud"
    high/index.m3u8
    #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=100000,URI="iframes.m3u8"

    """

    func media(prefix: String, segments: Int = 3, key: Bool = true) -> String {
        var lines = ["#EXTM3U", "#EXT-X-TARGETDURATION:2", "#EXT-X-PLAYLIST-TYPE:VOD"]
        if key { lines.append("#EXT-X-KEY:METHOD=AES-128,URI=\"https://keys.test/k.bin\"") }
        lines.append("#EXT-X-MAP:URI=\"\(prefix)init.mp4\",BYTERANGE=\"100@0\"")
        for i in 0..<segments { lines += ["#EXTINF:2.0,", "\(prefix)seg\(i).m4s"] }
        lines += ["#EXT-X-KEY:METHOD=SAMPLE-AES,KEYFORMAT=\"com.apple.streamingkeydelivery\",URI=\"skd://x\"",
                  "#EXTINF:2.0,", "\(prefix)seg\(segments).m4s", "#EXT-X-ENDLIST", ""]
        return lines.joined(separator: "\n")
    }

    /// Runs a walk to its end: fetches complete in the order issued, and
    /// playlists answer with `bodies[url]`. Returns every fetched item in order and the end.
    func walk(_ request: PreloadRequest, bodies: [String: String], failing: Set<String> = [],
              window: Int = 2) -> (items: [PreloadItem], end: PreloadFailure??, walker: PreloadWalker, maxRunning: Int) {
        var walker = PreloadWalker(request: request, window: window)
        var pending: [PreloadItem] = []
        var fetched: [PreloadItem] = []
        var end: PreloadFailure??
        var maxRunning = 0
        func apply(_ actions: [PreloadWalker.Action]) {
            for action in actions {
                switch action {
                case .fetch(let item): pending.append(item)
                case .finish(let failure): end = .some(failure)
                case .stopFetches: pending.removeAll()
                }
            }
            maxRunning = max(maxRunning, pending.count)
        }
        apply(walker.handle(.start))
        var steps = 0
        while !pending.isEmpty && steps < 1000 {
            steps += 1
            let item = pending.removeFirst()
            fetched.append(item)
            if failing.contains(item.url) {
                apply(walker.handle(.fetchFailed(id: item.id, .fetch(url: item.url, code: -5, message: "origin answered 404"))))
            } else {
                let body = item.wantsBody ? bodies[item.url].map { Array($0.utf8) } ?? Array("plain bytes".utf8) : nil
                apply(walker.handle(.fetched(id: item.id, body: body, finalURL: nil)))
            }
        }
        return (fetched, end, walker, maxRunning)
    }

    let root = "http://o.test/v/master.m3u8"

    var bodies: [String: String] {
        [
            root: master,
            "http://o.test/v/low/index.m3u8": media(prefix: ""),
            "http://o.test/v/high/index.m3u8": media(prefix: "http://cdn.test/high/"),
            "http://o.test/v/audio/en.m3u8": media(prefix: "a-", segments: 1, key: false),
            "http://o.test/v/subs/en.m3u8": media(prefix: "s-", segments: 1, key: false),
        ]
    }

    func testWholePresentation() {
        let result = walk(PreloadRequest(url: root), bodies: bodies)
        XCTAssertEqual(result.end, .some(nil))
        let urls = result.items.map(\.url)
        XCTAssertEqual(urls.first, root)
        // Playlists come before media; every variant and the renditions they use.
        for playlist in ["low/index.m3u8", "high/index.m3u8", "audio/en.m3u8", "subs/en.m3u8"] {
            XCTAssertTrue(urls.contains("http://o.test/v/" + playlist), playlist)
        }
        XCTAssertFalse(urls.contains("http://o.test/v/audio/fr.m3u8"), "a group no variant uses")
        XCTAssertFalse(urls.contains("http://o.test/v/iframes.m3u8"))
        XCTAssertFalse(urls.contains { $0.hasPrefix("skd:") })
        // The key shared by both variants once; the session key too.
        XCTAssertEqual(urls.filter { $0 == "https://keys.test/k.bin" }.count, 1)
        XCTAssertEqual(urls.filter { $0 == "https://keys.test/session.key" }.count, 1)
        // Init sections with their byte range.
        let inits = result.items.filter { $0.role == .initSection }
        XCTAssertEqual(Set(inits.map(\.url)), ["http://o.test/v/low/init.mp4", "http://cdn.test/high/init.mp4",
                                               "http://o.test/v/audio/a-init.mp4", "http://o.test/v/subs/s-init.mp4"])
        XCTAssertTrue(inits.allSatisfy { $0.range == 0..<100 })
        // 4 segments in each variant, 2 in each rendition.
        let segments = result.items.filter { $0.role == .segment }
        XCTAssertEqual(segments.count, 4 + 4 + 2 + 2)
        XCTAssertEqual(result.walker.counts.segmentsTotal, 12)
        XCTAssertEqual(result.walker.counts.segmentsDone, 12)
        XCTAssertEqual(result.walker.counts.resourcesDone, result.items.count)
        XCTAssertEqual(result.walker.counts.mediaSecondsDone, 24, accuracy: 0.001)
        // The estimate: each variant's BANDWIDTH × its 8 s (renditions are in the variants' BANDWIDTH).
        XCTAssertEqual(result.walker.counts.estimatedBytes, (800_000 + 2_000_000) * 8 / 8)
        XCTAssertLessThanOrEqual(result.maxRunning, 2, "at most the window at once")
    }

    func testOneVariantAndDuration() {
        var request = PreloadRequest(url: root, variants: .one(.lowest), duration: 3)
        var result = walk(request, bodies: bodies)
        XCTAssertEqual(result.end, .some(nil))
        var urls = result.items.map(\.url)
        XCTAssertFalse(urls.contains("http://o.test/v/high/index.m3u8"))
        XCTAssertTrue(urls.contains("http://o.test/v/subs/en.m3u8"), "the low variant's subtitles")
        // 3 s of 2 s segments: the first two (the second starts before 3 s).
        XCTAssertEqual(result.items.filter { $0.role == .segment && $0.url.hasPrefix("http://o.test/v/low/") }.map(\.url),
                       ["http://o.test/v/low/seg0.m4s", "http://o.test/v/low/seg1.m4s"])
        XCTAssertEqual(result.walker.counts.estimatedBytes, 800_000 * 4 / 8, "the 4 s of media chosen")
        request.variants = .one(.closest(toBandwidth: 5_000_000))
        request.duration = 2
        result = walk(request, bodies: bodies)
        urls = result.items.map(\.url)
        XCTAssertTrue(urls.contains("http://o.test/v/high/index.m3u8"))
        XCTAssertFalse(urls.contains("http://o.test/v/low/index.m3u8"))
        XCTAssertEqual(result.items.filter { $0.role == .segment && $0.url.hasPrefix("http://cdn.test/") }.map(\.url),
                       ["http://cdn.test/high/seg0.m4s"])
    }

    func testPlainResourceAndRange() {
        var result = walk(PreloadRequest(url: "http://o.test/movie.mp4"), bodies: [:])
        XCTAssertEqual(result.items.map(\.url), ["http://o.test/movie.mp4"])
        XCTAssertEqual(result.end, .some(nil))
        // A range of a playlist is only those bytes: nothing is walked.
        result = walk(PreloadRequest(url: root, range: 0..<10), bodies: bodies)
        XCTAssertEqual(result.items.count, 1)
        XCTAssertEqual(result.items[0].range, 0..<10)
    }

    func testFailuresAreReportedAfterTheRestIsDone() {
        let result = walk(PreloadRequest(url: root, variants: .one(.highest)), bodies: bodies,
                          failing: ["http://cdn.test/high/seg1.m4s"])
        XCTAssertEqual(result.end, .some(.fetch(url: "http://cdn.test/high/seg1.m4s", code: -5, message: "origin answered 404")))
        XCTAssertTrue(result.items.map(\.url).contains("http://cdn.test/high/seg3.m4s"), "the walk goes on")
        XCTAssertEqual(result.walker.counts.segmentsDone, result.walker.counts.segmentsTotal - 1)
    }

    func testMalformedChildPlaylistIsAClearError() {
        var broken = bodies
        broken["http://o.test/v/low/index.m3u8"] = "#EXTM3U\n#EXTINF:2.0,\nseg0.ts\n"  // no EXT-X-TARGETDURATION
        let result = walk(PreloadRequest(url: root, variants: .one(.lowest)), bodies: broken)
        XCTAssertEqual(result.end, .some(.playlist(url: "http://o.test/v/low/index.m3u8", .missingTargetDuration)))
        broken["http://o.test/v/low/index.m3u8"] = "<html>not found</html>"
        XCTAssertEqual(walk(PreloadRequest(url: root, variants: .one(.lowest)), bodies: broken).end,
                       .some(.playlist(url: "http://o.test/v/low/index.m3u8", .missingHeader)))
    }

    func testCancelStopsFetchesAndEnds() {
        var walker = PreloadWalker(request: PreloadRequest(url: root))
        guard case .fetch(let item)? = walker.handle(.start).first else { return XCTFail("no fetch") }
        _ = walker.handle(.fetched(id: item.id, body: Array(master.utf8), finalURL: nil))
        XCTAssertEqual(walker.handle(.cancel), [.stopFetches, .finish(.canceled)])
        XCTAssertTrue(walker.isFinished)
        XCTAssertEqual(walker.handle(.fetched(id: 2, body: nil, finalURL: nil)), [], "nothing after the end")
        var closing = PreloadWalker(request: PreloadRequest(url: root))
        _ = closing.handle(.start)
        XCTAssertEqual(closing.handle(.abort(.closed)), [.stopFetches, .finish(.closed)])
    }

    func testRelativeURIsResolveAgainstTheFinalURL() {
        var walker = PreloadWalker(request: PreloadRequest(url: "http://o.test/short"))
        guard case .fetch(let item)? = walker.handle(.start).first else { return XCTFail("no fetch") }
        let actions = walker.handle(.fetched(id: item.id, body: Array(media(prefix: "", segments: 1, key: false).utf8),
                                             finalURL: "http://cdn.test/real/index.m3u8"))
        guard case .fetch(let first)? = actions.first else { return XCTFail("no fetch") }
        XCTAssertEqual(first.url, "http://cdn.test/real/init.mp4")
    }

    func testParsingOfOptions() {
        XCTAssertEqual(PreloadRequest.parseRange("100-199"), 100..<200)
        XCTAssertNil(PreloadRequest.parseRange("200-100"))
        XCTAssertNil(PreloadRequest.parseRange("-5"))
        XCTAssertEqual(PreloadRequest.parseVariants("highest"), .one(.highest))
        XCTAssertEqual(PreloadRequest.parseVariants("500000"), .one(.closest(toBandwidth: 500_000)))
        XCTAssertNil(PreloadRequest.parseVariants("best"))
    }

    // MARK: DASH

    let mpd = """
    <?xml version="1.0"?>
    <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT6S">
      <Period>
        <AdaptationSet contentType="video">
          <SegmentTemplate timescale="1" duration="2" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number$.m4s"/>
          <Representation id="lo" bandwidth="300"/><Representation id="hi" bandwidth="900"/>
        </AdaptationSet>
        <AdaptationSet contentType="audio" lang="en"><Representation id="en" bandwidth="64">
          <SegmentTemplate timescale="10" initialization="en/init.mp4" media="en/$Time$.m4s">
            <SegmentTimeline><S t="0" d="20" r="2"/></SegmentTimeline></SegmentTemplate></Representation></AdaptationSet>
        <AdaptationSet contentType="audio" lang="fr"><Representation id="fr" bandwidth="64"><BaseURL>fr.mp4</BaseURL>
          <SegmentBase indexRange="100-151"><Initialization range="0-99"/></SegmentBase></Representation></AdaptationSet>
        <AdaptationSet contentType="text" lang="en"><Representation id="sub" bandwidth="1"><BaseURL>sub.vtt</BaseURL></Representation></AdaptationSet>
      </Period>
    </MPD>
    """

    /// A sidx of three 2 s references of 1024 bytes, right after the box
    /// (every byte ASCII: the walk helper takes bodies as strings).
    var sidx: String {
        var box: [UInt8] = []
        func u32(_ v: UInt32) { box += withUnsafeBytes(of: v.bigEndian, Array.init) }
        u32(52); box += Array("sidx".utf8); u32(0); u32(1); u32(1); u32(0); u32(0); box += [0, 0, 0, 3]
        for _ in 0..<3 { u32(1024); u32(2); u32(0) }
        return String(decoding: box, as: UTF8.self)
    }

    func testDASHWalkChoosesRepresentationsLanguagesAndDurations() {
        let root = "http://o.test/d/m.mpd"
        let u = { (path: String) in "http://o.test/d/" + path }
        // Every representation, all of it: the sidx is read for fr.mp4's segments.
        let all = walk(PreloadRequest(url: root), bodies: [root: mpd, u("fr.mp4"): sidx], failing: [u("lo/4.m4s"), u("hi/4.m4s")])
        XCTAssertEqual(all.end, .some(nil), "a missing segment past the counted end is no failure")
        XCTAssertEqual(all.walker.counts.segmentsDone, 3 + 3 + 3 + 3 + 1)
        XCTAssertTrue(all.items.contains { $0.url == u("fr.mp4") && $0.range == 100..<152 && $0.role == .segmentIndex })
        XCTAssertEqual(all.items.filter { $0.url == u("fr.mp4") && $0.role == .segment }.map(\.range),
                       [152..<1176, 1176..<2200, 2200..<3224])
        XCTAssertEqual(all.items.filter { $0.url.hasPrefix(u("en/")) }.map(\.url),
                       ["init.mp4", "0.m4s", "20.m4s", "40.m4s"].map { u("en/" + $0) })
        XCTAssertFalse(all.walker.counts.live)

        // The lowest video, French audio only (no French text: the English kept), 2 s of each.
        let some = walk(PreloadRequest(url: root, variants: .one(.lowest), duration: 2, language: "fr"),
                        bodies: [root: mpd, u("fr.mp4"): sidx])
        XCTAssertEqual(some.end, .some(nil))
        XCTAssertEqual(Set(some.items.map { $0.url + ($0.range.map { " \($0)" } ?? "") }), [
            root, u("lo/init.mp4"), u("lo/1.m4s"), u("fr.mp4 0..<100"), u("fr.mp4 100..<152"), u("fr.mp4 152..<1176"),
            u("sub.vtt"),
        ])

        // A manifest that is not well-formed fails the preload with the manifest's code.
        let bad = walk(PreloadRequest(url: root), bodies: [root: "<MPD><Period></MPD>"])
        guard case .some(.some(.manifest(let url, _))) = bad.end else { return XCTFail("\(String(describing: bad.end))") }
        XCTAssertEqual(url, root)
    }
}
