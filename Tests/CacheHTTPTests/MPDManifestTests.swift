@testable import CacheHTTP
import XCTest

/// Reading an MPD for a preload: segment addressing of every kind, values,
/// the sidx box, live availability.
final class MPDManifestTests: XCTestCase {
    let url = "http://o.example/v/m.mpd"

    func parse(_ body: String, now: Double = 0) throws -> MPDManifest {
        try MPDManifest.parse(Array(body.utf8), manifestURL: url, now: now)
    }

    /// A document nested without end (an origin's, hostile or broken) is
    /// refused as malformed before its tree gets deep: reading and rewriting
    /// it throw (the proxy then passes it through) instead of recursing.
    func testNestingBeyondTheBoundIsMalformed() throws {
        let levels = 200_000
        let deep = Array(("<MPD>" + String(repeating: "<a>", count: levels) + String(repeating: "</a>", count: levels) + "</MPD>").utf8)
        XCTAssertThrowsError(try MPDManifest.parse(deep, manifestURL: url, now: 0))
        XCTAssertThrowsError(try DASH.rewrite(deep, manifestURL: url) { _, _, _ in nil })
        let fine = "<MPD>" + String(repeating: "<a>", count: 100) + String(repeating: "</a>", count: 100) + "</MPD>"
        XCTAssertNoThrow(try parse(fine))
    }

    func testTemplateWithNumberTimelineAndInheritance() throws {
        let m = try parse("""
        <MPD type="static" mediaPresentationDuration="PT5S" maxSegmentDuration="PT2S">
          <Period><BaseURL>p/</BaseURL>
            <AdaptationSet contentType="video">
              <SegmentTemplate timescale="10" duration="20" startNumber="5" media="$RepresentationID$-$Number%03d$.m4s" initialization="$RepresentationID$/init-$Bandwidth$.mp4"/>
              <Representation id="hi" bandwidth="900"/>
              <Representation id="lo" bandwidth="300"><SegmentTemplate endNumber="6"/></Representation>
            </AdaptationSet>
            <AdaptationSet mimeType="audio/mp4" lang="en">
              <Representation id="a" bandwidth="64">
                <SegmentTemplate timescale="1000" media="t$Time$.m4s">
                  <SegmentTimeline><S t="100" d="2000" r="1"/><S d="1000"/><S t="10000" d="500" r="-1"/></SegmentTimeline>
                </SegmentTemplate>
              </Representation>
            </AdaptationSet>
          </Period>
        </MPD>
        """)
        XCTAssertFalse(m.isDynamic)
        XCTAssertNil(m.liveReuseMilliseconds)
        let sets = m.periods[0].adaptationSets
        XCTAssertEqual(sets.map(\.kind), [.video, .audio])
        let hi = sets[0].representations[0]
        XCTAssertEqual(hi.initialization?.url, "http://o.example/v/p/hi/init-900.mp4")
        XCTAssertEqual(hi.segments.map(\.url), (5...7).map { "http://o.example/v/p/hi-00\($0).m4s" })
        XCTAssertEqual(hi.segments.map(\.duration), [2, 2, 2])
        XCTAssertEqual(hi.trailingSegment?.url, "http://o.example/v/p/hi-008.m4s")
        XCTAssertEqual(sets[0].representations[1].segments.count, 2, "endNumber 6")
        XCTAssertEqual(sets[0].representation(.highest)?.id, "hi")
        XCTAssertEqual(sets[0].representation(.lowest)?.id, "lo")
        XCTAssertEqual(sets[0].representation(.closest(toBandwidth: 500))?.id, "lo")
        // r=-1 repeats up to the period's end (5 s): 10.0, 10.5 … 14.5 s.
        let audio = sets[1].representations[0]
        let expected: [String] = ["t100.m4s", "t2100.m4s", "t4100.m4s"].map { "http://o.example/v/p/" + $0 }
        // The r=-1 run starts at 10 s, after the period's end (5 s): none of it.
        XCTAssertEqual(audio.segments.map(\.url), expected)
        XCTAssertEqual(m.periods[0].adaptationSets(language: "en").count, 2)
        XCTAssertEqual(m.periods[0].adaptationSets(language: "fr").count, 2, "no French: every audio set kept")
    }

    func testTimelineRepeatsUntilTheNextEntryOrThePeriodEnd() throws {
        let m = try parse("""
        <MPD mediaPresentationDuration="PT10S"><Period><AdaptationSet><Representation id="r" bandwidth="1">
          <SegmentTemplate timescale="1" media="$Number$"><SegmentTimeline><S t="0" d="2" r="-1"/><S t="6" d="1" r="-1"/></SegmentTimeline></SegmentTemplate>
        </Representation></AdaptationSet></Period></MPD>
        """)
        let r = m.periods[0].adaptationSets[0].representations[0]
        XCTAssertEqual(r.segments.map(\.duration), [2, 2, 2, 1, 1, 1, 1])
        XCTAssertEqual(r.segments.last?.url, "http://o.example/v/7")
        XCTAssertNil(r.trailingSegment)
    }

    func testSegmentListAndSegmentBase() throws {
        let m = try parse("""
        <MPD mediaPresentationDuration="PT4S"><Period duration="PT4S"><AdaptationSet contentType="text" lang="de-AT">
          <Representation id="l" bandwidth="1"><BaseURL>one.mp4</BaseURL>
            <SegmentList timescale="1000" duration="2000"><Initialization range="0-99"/>
              <SegmentURL mediaRange="100-199" indexRange="100-119"/><SegmentURL media="two.mp4" index="two.sidx"/></SegmentList>
          </Representation>
          <Representation id="b" bandwidth="2"><BaseURL>b.mp4</BaseURL>
            <SegmentBase indexRange="800-851"><Initialization range="0-799"/><RepresentationIndex sourceURL="b.idx"/></SegmentBase>
          </Representation>
          <Representation id="plain" bandwidth="3"><BaseURL>http://cdn.example/whole.vtt</BaseURL></Representation>
        </AdaptationSet></Period></MPD>
        """)
        XCTAssertEqual(m.periods[0].adaptationSets[0].kind, .text)
        XCTAssertTrue(m.periods[0].adaptationSets[0].speaks("de"))
        let reps = m.periods[0].adaptationSets[0].representations
        XCTAssertEqual(reps[0].initialization, MPDSegment(url: "http://o.example/v/one.mp4", range: 0..<100))
        XCTAssertEqual(reps[0].segments, [MPDSegment(url: "http://o.example/v/one.mp4", range: 100..<200, duration: 2),
                                          MPDSegment(url: "http://o.example/v/two.mp4", duration: 2)])
        XCTAssertEqual(reps[0].indexes, [MPDSegment(url: "http://o.example/v/two.sidx")], "an index inside its media range is not fetched twice")
        XCTAssertEqual(reps[1].segmentIndex, MPDSegment(url: "http://o.example/v/b.mp4", range: 800..<852))
        XCTAssertEqual(reps[1].initialization, MPDSegment(url: "http://o.example/v/b.mp4", range: 0..<800))
        XCTAssertEqual(reps[1].indexes, [MPDSegment(url: "http://o.example/v/b.idx")])
        XCTAssertEqual(reps[2].segments, [MPDSegment(url: "http://cdn.example/whole.vtt", duration: 4)])
    }

    func testSegmentIndexBox() throws {
        // sidx v0: timescale 1000, first_offset 10, two references of 100 and 200 bytes, 2 s and 1.5 s.
        var box: [UInt8] = []
        func u32(_ v: UInt32) { box += withUnsafeBytes(of: v.bigEndian, Array.init) }
        u32(0); box += Array("sidx".utf8); u32(0); u32(1); u32(1000); u32(0); u32(10)
        box += [0, 0, 0, 2]
        u32(100); u32(2000); u32(0x9000_0000)
        u32(200); u32(1500); u32(0x9000_0000)
        let size = UInt32(box.count)
        box.replaceSubrange(0..<4, with: withUnsafeBytes(of: size.bigEndian, Array.init))
        let segments = try DASH.segments(fromIndex: box, url: "u", indexRange: 50..<(50 + Int64(box.count)))
        let first = 50 + Int64(box.count) + 10
        XCTAssertEqual(segments, [MPDSegment(url: "u", range: first..<(first + 100), duration: 2),
                                  MPDSegment(url: "u", range: (first + 100)..<(first + 300), duration: 1.5)])
        XCTAssertThrowsError(try DASH.segments(fromIndex: Array(box.prefix(30)), url: "u", indexRange: 0..<30))
        XCTAssertThrowsError(try DASH.segments(fromIndex: Array("1234moov".utf8), url: "u", indexRange: 0..<8))
    }

    func testDynamicManifestsOfferWhatIsAvailableAndSayHowLongACopyLasts() throws {
        let body = """
        <MPD type="dynamic" availabilityStartTime="2026-11-27T00:00:00Z" minimumUpdatePeriod="PT4S" timeShiftBufferDepth="PT10S">
          <Period start="PT0S"><AdaptationSet><Representation id="r" bandwidth="1">
            <SegmentTemplate timescale="1" duration="2" media="$Number$.m4s" startNumber="1"/>
          </Representation></AdaptationSet></Period></MPD>
        """
        let start = try XCTUnwrap(DASH.seconds(ofDateTime: "2026-11-27T00:00:00Z"))
        XCTAssertEqual(start, 1_795_737_600)
        let m = try parse(body, now: start + 101)
        XCTAssertTrue(m.isDynamic)
        XCTAssertEqual(m.liveReuseMilliseconds, 4000)
        // 50 segments are complete at 101 s; the last 10 s of them are in the window.
        let numbers = m.periods[0].adaptationSets[0].representations[0].segments.map { $0.url.split(separator: "/").last! }
        XCTAssertEqual(numbers, (46...50).map { "\($0).m4s" })
        // A live SegmentTimeline: its entries up to now (r="-1" repeating until now).
        let timeline = try parse("""
        <MPD type="dynamic" availabilityStartTime="2026-11-27T00:00:00Z"><Period start="PT0S"><AdaptationSet>
          <Representation id="r" bandwidth="1"><SegmentTemplate timescale="10" media="$Time$">
            <SegmentTimeline><S t="0" d="40"/><S d="20" r="-1"/></SegmentTimeline></SegmentTemplate></Representation>
        </AdaptationSet></Period></MPD>
        """, now: start + 11)
        XCTAssertEqual(timeline.periods[0].adaptationSets[0].representations[0].segments.map(\.url),
                       ["0", "40", "60", "80"].map { "http://o.example/v/" + $0 }, "complete by 11 s: up to 10 s")
        let noPeriod = try parse(body.replacingOccurrences(of: " minimumUpdatePeriod=\"PT4S\"", with: ""), now: start + 101)
        XCTAssertEqual(noPeriod.liveReuseMilliseconds, 1000, "half the longest segment")
    }

    func testPeriodsTakeTheirTimesFromEachOther() throws {
        let m = try parse("""
        <MPD mediaPresentationDuration="PT30S"><BaseURL>http://cdn.example/x/</BaseURL>
          <Period id="a"><AdaptationSet><Representation id="r" bandwidth="1">
            <SegmentTemplate duration="5" media="a$Number$"/></Representation></AdaptationSet></Period>
          <Period id="b" start="PT10S"><AdaptationSet><Representation id="r" bandwidth="1">
            <SegmentTemplate duration="5" media="b$Number$"/></Representation></AdaptationSet></Period>
          <Period id="c" start="PT25S"><AdaptationSet><Representation id="r" bandwidth="1">
            <SegmentTemplate duration="5" media="c$Number$"/></Representation></AdaptationSet></Period>
        </MPD>
        """)
        // a: until b starts; b: until c starts; c, the last: until the presentation ends.
        XCTAssertEqual(m.periods.map(\.start), [0, 10, 25])
        XCTAssertEqual(m.periods.map(\.duration), [10, 15, 5])
        XCTAssertEqual(m.periods.map { $0.adaptationSets[0].representations[0].segments.count }, [2, 3, 1])
        XCTAssertEqual(m.periods[1].adaptationSets[0].representations[0].segments.last?.url, "http://cdn.example/x/b3")
    }

    func testValues() {
        XCTAssertEqual(DASH.seconds(ofDuration: "PT1H2M3.5S"), 3723.5)
        XCTAssertEqual(DASH.seconds(ofDuration: "P1DT1S"), 86401)
        XCTAssertNil(DASH.seconds(ofDuration: "PT"))
        XCTAssertNil(DASH.seconds(ofDuration: "1S"))
        XCTAssertEqual(DASH.seconds(ofDateTime: "1970-01-02T00:00:01.5+01:00"), 86401.5 - 3600)
        XCTAssertNil(DASH.seconds(ofDateTime: "1970-01-02"))
        XCTAssertEqual(DASH.fill(template: "$RepresentationID$/$Number%05d$-$Time$-$Bandwidth$$$.m4s", representationID: "v",
                                 bandwidth: 7, number: 42, time: 9), "v/00042-9-7$.m4s")
        XCTAssertNil(DASH.fill(template: "$SubNumber$", representationID: "v", bandwidth: 1, number: 1))
        XCTAssertNil(DASH.fill(template: "$Number$", representationID: "v", bandwidth: 1))
        XCTAssertNil(DASH.fill(template: "$Number", representationID: "v", bandwidth: 1, number: 1))
        XCTAssertEqual(DASH.byteRange("10-19"), 10..<20)
        XCTAssertNil(DASH.byteRange("19-10"))
    }
}

/// Values at the edges of what the types hold: read or refused, never a trap.
final class MPDManifestEdgeTests: XCTestCase {
    func testHugeAndNonFiniteValuesAreBounded() throws {
        let bodies = [
            #"<MPD mediaPresentationDuration="P99999999999999999999999999999D"><Period><AdaptationSet><Representation id="r" bandwidth="1"><SegmentTemplate timescale="inf" duration="nan" media="$Number%0999999999d$"/></Representation></AdaptationSet></Period></MPD>"#,
            #"<MPD><Period duration="PT10S"><AdaptationSet><Representation id="r" bandwidth="1"><SegmentTemplate timescale="1" media="$Time$"><SegmentTimeline><S t="9223372036854775807" d="9223372036854775807" r="9223372036854775807"/><S d="1" r="-1"/></SegmentTimeline></SegmentTemplate></Representation></AdaptationSet></Period></MPD>"#,
            #"<MPD type="dynamic" availabilityStartTime="0001-01-01T00:00:00Z" timeShiftBufferDepth="P99999999999999999999999Y"><Period start="-PT5S"><AdaptationSet><Representation id="r" bandwidth="1"><SegmentTemplate duration="0.000001" timescale="1e300" media="$Number$"/></Representation></AdaptationSet></Period><Period start="PT1S"/></MPD>"#,
        ]
        for body in bodies {
            let m = try MPDManifest.parse(Array(body.utf8), manifestURL: "http://o.example/m.mpd", now: 1_800_000_000)
            let count = m.periods.flatMap(\.adaptationSets).flatMap(\.representations).map(\.segments.count).reduce(0, +)
            XCTAssertLessThanOrEqual(count, MPDManifest.segmentLimit, body)
        }
        var box: [UInt8] = [0, 0, 0, 1] + Array("sidx".utf8) + [UInt8](repeating: 0xFF, count: 40)
        box[12] = 0
        XCTAssertThrowsError(try DASH.segments(fromIndex: box, url: "u", indexRange: 0..<44))
        XCTAssertNil(DASH.fill(template: "$Number%0999999999d$", representationID: "r", bandwidth: 1, number: 1))
    }
}
