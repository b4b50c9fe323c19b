import CacheHTTP
import XCTest

/// The MPD rewriter, by table: every URL carrier resolved hierarchically,
/// with its kind; everything else byte for byte.
final class MPDRewriteTests: XCTestCase {
    let manifestURL = "http://o.example/v/manifest.mpd?tok=1"

    /// Rewrites with a mapping that writes "[kind|absolute]" for every URL.
    func tagged(_ mpd: String, kinds: inout [MPDURLKind]) throws -> String {
        var seen: [MPDURLKind] = []
        let out = try DASH.rewrite(Array(mpd.utf8), manifestURL: manifestURL) { absolute, _, kind in
            seen.append(kind)
            return "[\(kind)|\(absolute)]"
        }
        kinds = seen
        return String(decoding: out, as: UTF8.self)
    }

    func testEveryCarrierIsMappedWithItsKindAndResolvedAgainstTheBaseURLInScope() throws {
        // (input fragment inside <MPD>, expected output fragment, kinds in order)
        let cases: [(String, String, [MPDURLKind])] = [
            ("<BaseURL>b/</BaseURL>", "<BaseURL>[baseURL|http://o.example/v/b/]</BaseURL>", [.baseURL]),
            ("<Location>next.mpd</Location>", "<Location>[location|http://o.example/v/next.mpd]</Location>", [.location]),
            ("<PatchLocation ttl=\"9\">p.mpp</PatchLocation>",
             "<PatchLocation ttl=\"9\">[patchLocation|http://o.example/v/p.mpp]</PatchLocation>", [.patchLocation]),
            ("<Period xlink:href=\"/remote.xml\"/>", "<Period xlink:href=\"[remoteElement|http://o.example/remote.xml]\"/>",
             [.remoteElement]),
            ("<UTCTiming schemeIdUri=\"urn:mpeg:dash:utc:http-iso:2014\" value=\"https://t.example/now\"/>",
             "<UTCTiming schemeIdUri=\"urn:mpeg:dash:utc:http-iso:2014\" value=\"[timing|https://t.example/now]\"/>", [.timing]),
            ("<Period><BaseURL>p/</BaseURL><AdaptationSet><BaseURL>a/</BaseURL><Representation id=\"r\">"
             + "<BaseURL>r/</BaseURL><SegmentTemplate media=\"$RepresentationID$/$Number%05d$.m4s\" "
             + "initialization=\"i-$Bandwidth$.mp4\" index=\"x$$.sidx\" bitstreamSwitching=\"bs.mp4\"/>"
             + "</Representation></AdaptationSet></Period>",
             "<Period><BaseURL>[baseURL|http://o.example/v/p/]</BaseURL><AdaptationSet><BaseURL>[baseURL|http://o.example/v/p/a/]</BaseURL><Representation id=\"r\">"
             + "<BaseURL>[baseURL|http://o.example/v/p/a/r/]</BaseURL><SegmentTemplate media=\"[mediaTemplate|http://o.example/v/p/a/r/$RepresentationID$/$Number%05d$.m4s]\" "
             + "initialization=\"[initializationTemplate|http://o.example/v/p/a/r/i-$Bandwidth$.mp4]\" index=\"[indexTemplate|http://o.example/v/p/a/r/x$$.sidx]\" bitstreamSwitching=\"[bitstreamSwitchingTemplate|http://o.example/v/p/a/r/bs.mp4]\"/>"
             + "</Representation></AdaptationSet></Period>",
             [.baseURL, .baseURL, .baseURL, .mediaTemplate, .initializationTemplate, .indexTemplate, .bitstreamSwitchingTemplate]),
            ("<Period><SegmentList><Initialization sourceURL=\"i.mp4\" range=\"0-9\"/><RepresentationIndex sourceURL=\"ri\"/>"
             + "<BitstreamSwitching sourceURL=\"bs\"/><SegmentURL media=\"s1.m4s?a=1&amp;b=2\" index=\"s1.idx\"/></SegmentList></Period>",
             "<Period><SegmentList><Initialization sourceURL=\"[initialization|http://o.example/v/i.mp4]\" range=\"0-9\"/><RepresentationIndex sourceURL=\"[representationIndex|http://o.example/v/ri]\"/>"
             + "<BitstreamSwitching sourceURL=\"[bitstreamSwitching|http://o.example/v/bs]\"/><SegmentURL media=\"[segment|http://o.example/v/s1.m4s?a=1&amp;b=2]\" index=\"[segmentIndex|http://o.example/v/s1.idx]\"/></SegmentList></Period>",
             [.initialization, .representationIndex, .bitstreamSwitching, .segment, .segmentIndex]),
            ("<Period><AdaptationSet><ContentProtection schemeIdUri=\"urn:x\"><dashif:Laurl xmlns:dashif=\"https://dashif.org/CPS\">https://l.example/ck</dashif:Laurl>"
             + "<ms:laurl licenseUrl=\"https://l.example/pr\"/></ContentProtection></AdaptationSet></Period>",
             "<Period><AdaptationSet><ContentProtection schemeIdUri=\"urn:x\"><dashif:Laurl xmlns:dashif=\"https://dashif.org/CPS\">[licence|https://l.example/ck]</dashif:Laurl>"
             + "<ms:laurl licenseUrl=\"[licence|https://l.example/pr]\"/></ContentProtection></AdaptationSet></Period>",
             [.licence, .licence]),
            // Whitespace around a BaseURL is kept; an absolute one replaces the base.
            ("<BaseURL>\n  https://cdn.example/x/ \n</BaseURL><Period><BaseURL>y/</BaseURL></Period>",
             "<BaseURL>\n  [baseURL|https://cdn.example/x/] \n</BaseURL><Period><BaseURL>[baseURL|https://cdn.example/x/y/]</BaseURL></Period>",
             [.baseURL, .baseURL]),
            // A second BaseURL is an alternative: children resolve against the first.
            ("<BaseURL>a/</BaseURL><BaseURL>b/</BaseURL><Location>m.mpd</Location>",
             "<BaseURL>[baseURL|http://o.example/v/a/]</BaseURL><BaseURL>[baseURL|http://o.example/v/b/]</BaseURL><Location>[location|http://o.example/v/a/m.mpd]</Location>",
             [.baseURL, .baseURL, .location]),
            // A relative template above BaseURLs is left for them to resolve (the rewritten BaseURLs lead to the proxy).
            ("<Period><AdaptationSet><SegmentTemplate media=\"$Number$.m4s\"/><Representation><BaseURL>r1/</BaseURL></Representation></AdaptationSet></Period>",
             "<Period><AdaptationSet><SegmentTemplate media=\"$Number$.m4s\"/><Representation><BaseURL>[baseURL|http://o.example/v/r1/]</BaseURL></Representation></AdaptationSet></Period>",
             [.baseURL]),
            // So is a SegmentList there; one in the Representation resolves against its BaseURL.
            ("<Period><AdaptationSet><SegmentList><SegmentURL media=\"1.m4s\"/></SegmentList><Representation><BaseURL>r1/</BaseURL>"
             + "<SegmentList><Initialization sourceURL=\"i.mp4\"/></SegmentList></Representation></AdaptationSet></Period>",
             "<Period><AdaptationSet><SegmentList><SegmentURL media=\"1.m4s\"/></SegmentList><Representation><BaseURL>[baseURL|http://o.example/v/r1/]</BaseURL>"
             + "<SegmentList><Initialization sourceURL=\"[initialization|http://o.example/v/r1/i.mp4]\"/></SegmentList></Representation></AdaptationSet></Period>",
             [.baseURL, .initialization]),
            // A BaseURL that cannot be read: nothing below it is mapped.
            ("<BaseURL><![CDATA[x/]]></BaseURL><Location>m.mpd</Location>",
             "<BaseURL><![CDATA[x/]]></BaseURL><Location>m.mpd</Location>", []),
            // Not http(s), CDATA, mixed content and DTD entities: kept and not mapped.
            ("<BaseURL>urn:x:y</BaseURL><Location><![CDATA[a.mpd]]></Location><Location>a<!-- c -->b</Location><Location>&ent;</Location>",
             "<BaseURL>urn:x:y</BaseURL><Location><![CDATA[a.mpd]]></Location><Location>a<!-- c -->b</Location><Location>&ent;</Location>",
             []),
            // Non-carriers are not touched.
            ("<Period><AdaptationSet><Representation media=\"x\" sourceURL=\"y\"><Other href=\"z\"/></Representation></AdaptationSet></Period>",
             "<Period><AdaptationSet><Representation media=\"x\" sourceURL=\"y\"><Other href=\"z\"/></Representation></AdaptationSet></Period>",
             []),
        ]
        for (fragment, expected, expectedKinds) in cases {
            let head = "<?xml version=\"1.0\"?>\n<!-- c --><MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" type='static'>"
            var kinds: [MPDURLKind] = []
            let out = try tagged(head + fragment + "</MPD>\n", kinds: &kinds)
            XCTAssertEqual(out, head + expected + "</MPD>\n", fragment)
            XCTAssertEqual(kinds, expectedKinds, fragment)
        }
        // Every kind was exercised above.
        XCTAssertEqual(Set(cases.flatMap { $0.2 }).count, MPDURLKind.allCases.count)
    }

    func testReplacementsAreEscapedForWhereTheyStand() throws {
        let mpd = "<MPD><BaseURL>a/</BaseURL><Period xlink:href='r.xml'/></MPD>"
        let out = try DASH.rewrite(Array(mpd.utf8), manifestURL: manifestURL) { _, _, _ in "http://p/x?a=1&b=\"'<>" }
        XCTAssertEqual(String(decoding: out, as: UTF8.self),
                       "<MPD><BaseURL>http://p/x?a=1&amp;b=\"'&lt;&gt;</BaseURL><Period xlink:href='http://p/x?a=1&amp;b=\"&apos;&lt;>'/></MPD>")
    }

    func testBadInputThrowsAndAMappingOfNothingIsTheIdentity() throws {
        let bad: [(String, DASHError?)] = [
            ("", nil), ("<MPD>", nil), ("<MPD></Period>", nil), ("<MPD a=b/>", nil), ("<MPD><!-- x</MPD>", nil),
            ("<MPD/><MPD/>", nil), ("<MPD a='1' a='2'/>", nil), ("<MPD a='<'/>", nil),
            ("<Other/>", .notMPD),
        ]
        for (input, expected) in bad {
            XCTAssertThrowsError(try DASH.rewrite(Array(input.utf8), manifestURL: manifestURL) { _, _, _ in "x" }, input) { error in
                if let expected { XCTAssertEqual(error as? DASHError, expected, input) }
            }
        }
        XCTAssertThrowsError(try DASH.rewrite(Array("<MPD/>".utf8), manifestURL: "ftp://x/") { _, _, _ in nil })
        let mpd = "\u{FEFF}<?xml version='1.0'?><!DOCTYPE MPD [<!ENTITY e 'x'>]><MPD><BaseURL>a/</BaseURL><![CDATA[<x>]]></MPD>"
        XCTAssertEqual(try DASH.rewrite(Array(mpd.utf8), manifestURL: manifestURL) { _, _, _ in nil }, Array(mpd.utf8))
    }

    func testDetection() {
        XCTAssertTrue(DASH.isManifest(contentType: "application/dash+xml; charset=utf-8", path: "/x", bodyPrefix: []))
        XCTAssertTrue(DASH.isManifest(contentType: nil, path: "/a/Manifest.MPD?x=1", bodyPrefix: []))
        XCTAssertTrue(DASH.isManifest(contentType: "application/xml", path: "/a",
                                      bodyPrefix: Array("\u{FEFF}<?xml version=\"1.0\"?>\n<!-- hi -->\n<MPD xmlns=\"x\">".utf8)))
        XCTAssertTrue(DASH.isManifest(contentType: "text/plain", path: "/a", bodyPrefix: Array("<dash:MPD>".utf8)))
        XCTAssertFalse(DASH.isManifest(contentType: "video/mp4", path: "/a.mpd", bodyPrefix: []))
        XCTAssertFalse(DASH.isManifest(contentType: nil, path: "/a", bodyPrefix: Array("<MPDX>".utf8)))
        XCTAssertFalse(DASH.isManifest(contentType: nil, path: "/a.mpd.mp4", bodyPrefix: Array("<html>".utf8)))
    }
}
