import CacheHTTP
@testable import CacheLoading
import XCTest

/// Prefetching's decisions as a value: renditions and requests in, fetches
/// and stops out, no sockets and no clock.
final class PrefetchPlanTests: XCTestCase {
    let title = "https://o.test/master.m3u8"

    func rendition(_ name: String, count: Int, group: String = "v", live: Bool = false,
                   needs: [PrefetchResource] = []) -> PrefetchRendition {
        PrefetchRendition(id: "https://o.test/\(name).m3u8", family: PrefetchFamily(group: group, title: title), isLive: live,
                          segments: (0..<count).map { PrefetchSegment(url: "https://o.test/\(name)/\($0).ts", needs: needs) })
    }

    func url(_ name: String, _ index: Int) -> String { "https://o.test/\(name)/\(index).ts" }

    /// The URLs fetched by `actions`, in order.
    func fetched(_ actions: [PrefetchPlan.Action]) -> [String] {
        actions.compactMap { if case .fetch(let item) = $0 { return item.url } else { return nil } }
    }

    func item(_ actions: [PrefetchPlan.Action], _ url: String) -> PrefetchItem? {
        for case .fetch(let item) in actions where item.url == url { return item }
        return nil
    }

    func plan(depth: Int = 2, _ renditions: PrefetchRendition...) -> PrefetchPlan {
        var plan = PrefetchPlan(limits: PrefetchPlan.Limits(depth: depth))
        XCTAssertEqual(plan.handle(.renditionsRead(renditions, now: 0)), [])
        return plan
    }

    func testInOrderRequestsFetchDepthAhead() {
        var plan = plan(rendition("a", count: 10))
        // The first request fetches one: a single request may be a scrub.
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 0), now: 1))), [url("a", 1)])
        // The second in order fetches up to depth ahead, never twice.
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 1), now: 2))), [url("a", 2), url("a", 3)])
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 2), now: 3))), [url("a", 4)])
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 2), now: 4))), [], "the same segment again")
    }

    func testARequestBeforeThePlaylistWasReadCounts() {
        var plan = PrefetchPlan(limits: PrefetchPlan.Limits(depth: 2))
        XCTAssertEqual(plan.handle(.requested(url: url("a", 0), now: 1)), [])
        XCTAssertEqual(fetched(plan.handle(.renditionsRead([rendition("a", count: 10)], now: 2))), [url("a", 1)])
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 1), now: 3))), [url("a", 2), url("a", 3)])
    }

    func testRequestsBeforeThePlaylistWasReadCountInOrder() {
        var plan = PrefetchPlan(limits: PrefetchPlan.Limits(depth: 2))
        XCTAssertEqual(plan.handle(.requested(url: url("a", 0), now: 1)), [])
        XCTAssertEqual(plan.handle(.requested(url: "https://o.test/elsewhere", now: 2)), [])
        XCTAssertEqual(plan.handle(.requested(url: url("a", 1), now: 3)), [])
        XCTAssertEqual(fetched(plan.handle(.renditionsRead([rendition("a", count: 10)], now: 4))),
                       [url("a", 1), url("a", 2), url("a", 3)])
    }

    func testAnOldRequestBeforeThePlaylistCountsForNothing() {
        var plan = PrefetchPlan(limits: PrefetchPlan.Limits(depth: 2))
        XCTAssertEqual(plan.handle(.requested(url: url("a", 0), now: 1)), [])
        XCTAssertEqual(plan.handle(.renditionsRead([rendition("a", count: 10)], now: 60_000)), [])
        XCTAssertFalse(plan.isPlaying)
    }

    func testStopsAtTheEndOfTheRendition() {
        var plan = plan(rendition("a", count: 3))
        _ = plan.handle(.requested(url: url("a", 0), now: 1))
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 1), now: 2))), [url("a", 2)])
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 2), now: 3))), [])
    }

    func testUnknownURLsAndDepthZeroFetchNothing() {
        var plan = plan(rendition("a", count: 10))
        XCTAssertEqual(plan.handle(.requested(url: "https://o.test/other.ts", now: 1)), [])
        var off = self.plan(depth: 0, rendition("a", count: 10))
        XCTAssertEqual(off.handle(.requested(url: url("a", 0), now: 1)), [])
        XCTAssertEqual(off.handle(.requested(url: url("a", 1), now: 2)), [])
    }

    func testScrubbingCostsOneFetchARequest() {
        var plan = plan(depth: 4, rendition("a", count: 100))
        var total = 0
        for index in [50, 10, 80, 30, 5, 70] {
            let actions = plan.handle(.requested(url: url("a", index), now: Int64(index)))
            XCTAssertEqual(fetched(actions), [url("a", index + 1)], "at \(index)")
            total += fetched(actions).count
        }
        XCTAssertEqual(total, 6)
    }

    func testSeekStopsTheOldFetchesAndStartsFromTheNewPosition() {
        var plan = plan(depth: 3, rendition("a", count: 100))
        _ = plan.handle(.requested(url: url("a", 0), now: 1))
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 1), now: 2))), [url("a", 2), url("a", 3), url("a", 4)])
        let seek = plan.handle(.requested(url: url("a", 60), now: 3))
        XCTAssertEqual(seek.first, .stop(rendition: "https://o.test/a.m3u8"))
        XCTAssertEqual(fetched(seek), [url("a", 61)])
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 61), now: 4))), [url("a", 62), url("a", 63), url("a", 64)])
    }

    func testQualitySwitchStopsTheOldRendition() {
        var plan = plan(rendition("low", count: 20), rendition("high", count: 20), rendition("audio", count: 20, group: "a"))
        _ = plan.handle(.requested(url: url("low", 0), now: 1))
        _ = plan.handle(.requested(url: url("low", 1), now: 2))
        // Audio is another group: it plays beside the video, nothing stops.
        let audio = plan.handle(.requested(url: url("audio", 0), now: 3))
        XCTAssertEqual(fetched(audio), [url("audio", 1)])
        XCTAssertFalse(audio.contains(.stop(rendition: "https://o.test/low.m3u8")))
        let switched = plan.handle(.requested(url: url("high", 2), now: 4))
        XCTAssertEqual(switched.first, .stop(rendition: "https://o.test/low.m3u8"))
        XCTAssertEqual(fetched(switched), [url("high", 3)])
        // The old rendition's late results change nothing; it fetches no more.
        XCTAssertEqual(plan.handle(.fetched(PrefetchItem(rendition: "https://o.test/low.m3u8", title: title,
                                                         resource: PrefetchResource(url: url("low", 3)), index: 3),
                                            bytes: 10)), [])
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("high", 3), now: 5))), [url("high", 4), url("high", 5)])
    }

    func testIdleRenditionStops() {
        var plan = plan(rendition("a", count: 20))
        _ = plan.handle(.requested(url: url("a", 0), now: 1000))
        XCTAssertTrue(plan.isPlaying)
        XCTAssertEqual(plan.handle(.tick(now: 30_999)), [])
        XCTAssertEqual(plan.handle(.tick(now: 31_000)), [.stop(rendition: "https://o.test/a.m3u8")])
        XCTAssertFalse(plan.isPlaying)
        // Coming back later starts afresh: one ahead.
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 1), now: 40_000))), [url("a", 2)])
    }

    func testFailurePausesUntilThePlayerIsPastIt() {
        var plan = plan(rendition("a", count: 20))
        _ = plan.handle(.requested(url: url("a", 0), now: 1))
        let actions = plan.handle(.requested(url: url("a", 1), now: 2))
        let failing = try! XCTUnwrap(item(actions, url("a", 2)))
        XCTAssertEqual(plan.handle(.failed(failing)), [], "no retry")
        // Still before the failed one: nothing more.
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 2), now: 3))), [])
        // Past it: on again.
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 3), now: 4))), [url("a", 4), url("a", 5)])
    }

    func testKeysAndInitSectionsOncePerRun() {
        let needs = [PrefetchResource(url: "https://o.test/key"), PrefetchResource(url: "https://o.test/init.mp4", range: 0..<100)]
        var plan = plan(rendition("a", count: 10, needs: needs))
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 0), now: 1))),
                       ["https://o.test/key", "https://o.test/init.mp4", url("a", 1)])
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 1), now: 2))), [url("a", 2), url("a", 3)])
    }

    func testLivePlaylistPrefetchesOnlyListedSegmentsAndFollowsItsGrowth() {
        var plan = plan(depth: 3, rendition("live", count: 3, live: true))
        _ = plan.handle(.requested(url: url("live", 0), now: 1))
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("live", 1), now: 2))), [url("live", 2)], "only what is listed")
        // The playlist reloaded: the oldest segment gone, two new ones.
        var grown = rendition("live", count: 5, live: true)
        grown.segments.removeFirst()
        XCTAssertEqual(fetched(plan.handle(.renditionsRead([grown], now: 3))), [url("live", 3), url("live", 4)])
    }

    func testLongPlaylistAndManyRenditionsStayBounded() {
        var limits = PrefetchPlan.Limits(depth: 2)
        limits.maxSegments = 1000
        limits.maxRenditions = 4
        var plan = PrefetchPlan(limits: limits)
        _ = plan.handle(.renditionsRead([rendition("long", count: 100_000)], now: 0))
        XCTAssertEqual(plan.tracks["https://o.test/long.m3u8"]?.rendition.segments.count, 1000)
        for name in ["b", "c", "d", "e", "f"] { _ = plan.handle(.renditionsRead([rendition(name, count: 10)], now: 1)) }
        XCTAssertEqual(plan.tracks.count, 4)
        XCTAssertNil(plan.tracks["https://o.test/long.m3u8"], "the least recently used let go")
        XCTAssertEqual(plan.handle(.requested(url: url("long", 1), now: 2)), [], "its URLs forgotten too")
    }

    func testTitleShareHoldsFetches() {
        var limits = PrefetchPlan.Limits(depth: 4)
        limits.titleShare = 250
        var plan = PrefetchPlan(limits: limits)
        _ = plan.handle(.renditionsRead([rendition("a", count: 50)], now: 0))
        _ = plan.handle(.requested(url: url("a", 0), now: 1))
        let actions = plan.handle(.requested(url: url("a", 1), now: 2))
        XCTAssertEqual(fetched(actions), [url("a", 2), url("a", 3), url("a", 4), url("a", 5)])
        for index in 2...5 {
            _ = plan.handle(.fetched(try! XCTUnwrap(item(actions, url("a", index))), bytes: 100))
        }
        // 300 bytes nobody asked for yet (3, 4, 5): over the share, 6 waits.
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 2), now: 3))), [])
        // The player used one more: under the share again.
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 3), now: 4))), [url("a", 6), url("a", 7)])
    }

    func testASeekLetsGoOfWhatItSkippedAndRefetchesStoppedKeys() {
        var limits = PrefetchPlan.Limits(depth: 2)
        limits.titleShare = 150
        var plan = PrefetchPlan(limits: limits)
        let key = PrefetchResource(url: "https://o.test/key")
        _ = plan.handle(.renditionsRead([rendition("a", count: 50, needs: [key])], now: 0))
        XCTAssertEqual(fetched(plan.handle(.requested(url: url("a", 0), now: 1))), [key.url, url("a", 1)])
        let ahead = plan.handle(.requested(url: url("a", 1), now: 2))
        for index in 2...3 { _ = plan.handle(.fetched(try! XCTUnwrap(item(ahead, url("a", index))), bytes: 100)) }
        // 200 unused bytes: over the share. A seek skips them: the share is free again, and
        // the key, stopped before it arrived, is fetched again.
        let seek = plan.handle(.requested(url: url("a", 30), now: 3))
        XCTAssertEqual(seek.first, .stop(rendition: "https://o.test/a.m3u8"))
        XCTAssertEqual(fetched(seek), [key.url, url("a", 31)])
    }

    func testRenditionsFromPlaylists() throws {
        let master = """
        #EXTM3U
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="en",URI="audio/en.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=800000,AUDIO="aud"
        low/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=2000000,AUDIO="aud"
        high/index.m3u8

        """
        guard case .master(let parsed) = try HLSPlaylist.parse(Array(master.utf8), playlistURL: title) else {
            return XCTFail("a master")
        }
        let families = PrefetchRendition.families(parsed, url: title)
        XCTAssertEqual(families["https://o.test/low/index.m3u8"], families["https://o.test/high/index.m3u8"])
        XCTAssertNotEqual(families["https://o.test/low/index.m3u8"]?.group, families["https://o.test/audio/en.m3u8"]?.group)
        let media = """
        #EXTM3U
        #EXT-X-TARGETDURATION:2
        #EXT-X-KEY:METHOD=AES-128,URI="k.key"
        #EXTINF:2,
        s0.ts
        #EXT-X-GAP
        #EXTINF:2,
        s1.ts
        #EXTINF:2,
        #EXT-X-BYTERANGE:100@0
        s2.ts
        #EXTINF:2,
        s3.ts
        #EXT-X-ENDLIST

        """
        guard case .media(let playlist) = try HLSPlaylist.parse(Array(media.utf8), playlistURL: "https://o.test/low/index.m3u8")
        else { return XCTFail("a media playlist") }
        let rendition = PrefetchRendition.hls(playlist, url: "https://o.test/low/index.m3u8",
                                              family: families["https://o.test/low/index.m3u8"])
        XCTAssertFalse(rendition.isLive)
        XCTAssertEqual(rendition.segments.map(\.url), ["https://o.test/low/s0.ts", "https://o.test/low/s3.ts"],
                       "gaps and byte ranges are not asked for by URL")
        XCTAssertEqual(rendition.segments[0].needs, [PrefetchResource(url: "https://o.test/low/k.key")])
        XCTAssertEqual(rendition.family.title, title)
    }

    func testLowLatencyPartsAreARenditionOfTheirOwn() throws {
        let media = """
        #EXTM3U
        #EXT-X-TARGETDURATION:4
        #EXT-X-PART-INF:PART-TARGET=1.0
        #EXT-X-MEDIA-SEQUENCE:10
        #EXT-X-MAP:URI="init.mp4"
        #EXT-X-PART:DURATION=1.0,URI="s10.p0.m4s",INDEPENDENT=YES
        #EXT-X-PART:DURATION=1.0,URI="s10.p1.m4s"
        #EXTINF:2.0,
        s10.m4s
        #EXT-X-PART:DURATION=1.0,URI="s11.p0.m4s"
        #EXT-X-PART:DURATION=1.0,URI="s11.p1.m4s",BYTERANGE=100@0

        """
        let url = "https://o.test/ll/index.m3u8"
        guard case .media(let playlist) = try HLSPlaylist.parse(Array(media.utf8), playlistURL: url) else {
            return XCTFail("a media playlist")
        }
        let parts = try XCTUnwrap(PrefetchRendition.hlsParts(playlist, url: url, family: nil))
        XCTAssertTrue(parts.isLive)
        XCTAssertEqual(parts.segments.map(\.url), ["s10.p0.m4s", "s10.p1.m4s", "s11.p0.m4s"].map { "https://o.test/ll/" + $0 },
                       "listed parts, byte ranges left out")
        XCTAssertEqual(parts.segments[0].needs, [PrefetchResource(url: "https://o.test/ll/init.mp4")])
        XCTAssertEqual(parts.family, PrefetchRendition.hls(playlist, url: url, family: nil).family, "one group with the segments")
        var plan = PrefetchPlan(limits: PrefetchPlan.Limits(depth: 2))
        _ = plan.handle(.renditionsRead([PrefetchRendition.hls(playlist, url: url, family: nil), parts], now: 0))
        XCTAssertEqual(fetched(plan.handle(.requested(url: "https://o.test/ll/s10.p0.m4s", now: 1))),
                       ["https://o.test/ll/init.mp4", "https://o.test/ll/s10.p1.m4s"])
        XCTAssertEqual(fetched(plan.handle(.requested(url: "https://o.test/ll/s10.p1.m4s", now: 2))),
                       ["https://o.test/ll/s11.p0.m4s"], "only what is listed")
    }

    func testRenditionsFromATemplateMPD() throws {
        let mpd = """
        <?xml version="1.0"?>
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT8S">
          <Period>
            <AdaptationSet mimeType="video/mp4">
              <SegmentTemplate initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number$.m4s" startNumber="1" duration="2" timescale="1"/>
              <Representation id="v1" bandwidth="100000"/>
              <Representation id="v2" bandwidth="200000"/>
            </AdaptationSet>
          </Period>
        </MPD>
        """
        let manifest = try MPDManifest.parse(Array(mpd.utf8), manifestURL: "https://o.test/d/manifest.mpd", now: 0)
        let renditions = PrefetchRendition.dash(manifest, url: "https://o.test/d/manifest.mpd")
        XCTAssertEqual(renditions.count, 2)
        XCTAssertEqual(renditions[0].family, renditions[1].family, "one adaptation set: one group")
        XCTAssertEqual(renditions[0].segments.map(\.url), (1...4).map { "https://o.test/d/v1/\($0).m4s" })
        XCTAssertEqual(renditions[0].segments[0].needs, [PrefetchResource(url: "https://o.test/d/v1/init.mp4")])
    }
}
