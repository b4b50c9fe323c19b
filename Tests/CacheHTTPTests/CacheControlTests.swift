import CacheHTTP
import XCTest

/// A CacheControl with the given changes, as an expected value.
private func cc(_ edit: (inout CacheControl) -> Void = { _ in }) -> CacheControl {
    var c = CacheControl()
    c.isEmpty = false
    edit(&c)
    return c
}

final class CacheControlTests: XCTestCase {
    func testParse() {
        let cases: [(lines: [String], expected: CacheControl, line: UInt)] = [
            ([], CacheControl(), #line),
            ([""], CacheControl(), #line),
            ([" , ,"], CacheControl(), #line),
            (["max-age=60"], cc { $0.maxAge = 60 }, #line),
            (["MAX-AGE=60"], cc { $0.maxAge = 60 }, #line),                          // names are case-insensitive
            (["max-age=\"60\""], cc { $0.maxAge = 60 }, #line),                      // quoted form accepted
            (["max-age = 60"], cc { $0.maxAge = 0 }, #line),                         // no spaces around "=" (§5.2)
            (["max-age= 5"], cc { $0.maxAge = 0 }, #line),
            (["max-age =5, no-store"], cc { $0.maxAge = 0; $0.noStore = true }, #line),
            (["max-age=100a"], cc { $0.maxAge = 0 }, #line),                         // not delta-seconds → stale
            (["max-age=5 "], cc { $0.maxAge = 5 }, #line),                           // OWS before a comma is fine
            (["private= \"x\""], cc { $0.isPrivate = true }, #line),                 // invalid → most restrictive
            (["max-age=abc"], cc { $0.maxAge = 0 }, #line),                          // invalid → stale (§4.2.1)
            (["max-age=-1"], cc { $0.maxAge = 0 }, #line),
            (["max-age"], cc { $0.maxAge = 0 }, #line),
            (["max-age=1.5"], cc { $0.maxAge = 0 }, #line),
            (["max-age=99999999999999999999999"], cc { $0.maxAge = 2_147_483_648 }, #line),  // clamped (§1.2.2)
            (["max-age=60, max-age=10"], cc { $0.maxAge = 10 }, #line),              // conflict → most restrictive
            (["max-age=10", "max-age=60"], cc { $0.maxAge = 10 }, #line),            // across field lines
            (["max-age=60, max-age=x"], cc { $0.maxAge = 0 }, #line),
            (["s-maxage=30, max-age=60"], cc { $0.sharedMaxAge = 30; $0.maxAge = 60 }, #line),
            (["no-store"], cc { $0.noStore = true }, #line),
            (["no-cache"], cc { $0.noCache = true }, #line),
            (["no-cache=\"Set-Cookie, X-Foo\""], cc { $0.noCacheFields = ["set-cookie", "x-foo"] }, #line),
            (["no-cache=x"], cc { $0.noCacheFields = ["x"] }, #line),                // token form too
            (["no-cache=\"x\", no-cache"], cc { $0.noCacheFields = ["x"]; $0.noCache = true }, #line),
            (["no-cache=\"\""], cc { $0.noCache = true }, #line),                    // empty list = unqualified
            (["private"], cc { $0.isPrivate = true }, #line),
            (["private=\"Set-Cookie\""], cc { $0.privateFields = ["set-cookie"] }, #line),
            (["public, private"], cc { $0.isPublic = true; $0.isPrivate = true }, #line),
            (["must-revalidate, proxy-revalidate"], cc { $0.mustRevalidate = true; $0.proxyRevalidate = true }, #line),
            (["must-understand, no-store"], cc { $0.mustUnderstand = true; $0.noStore = true }, #line),
            (["no-transform, immutable"], cc { $0.noTransform = true; $0.immutable = true }, #line),
            (["stale-while-revalidate=30, stale-if-error=600"],
             cc { $0.staleWhileRevalidate = 30; $0.staleIfError = 600 }, #line),
            (["stale-while-revalidate=x"], cc(), #line),                            // bad → no permission
            (["stale-if-error=60, stale-if-error=30"], cc { $0.staleIfError = 30 }, #line),
            (["max-stale"], cc { $0.maxStale = CacheControl.anyStaleness }, #line),
            (["max-stale=120"], cc { $0.maxStale = 120 }, #line),
            (["max-stale=", "max-stale=oops"], cc(), #line),                         // bad value ignored
            (["max-stale, max-stale=5"], cc { $0.maxStale = 5 }, #line),
            (["min-fresh=10, min-fresh=20"], cc { $0.minFresh = 20 }, #line),        // largest is most restrictive
            (["only-if-cached"], cc { $0.onlyIfCached = true }, #line),
            (["community=\"UCI\", max-age=5"], cc { $0.maxAge = 5 }, #line),         // unknown ignored
            (["foo=\"a,max-age=1\", max-age=9"], cc { $0.maxAge = 9 }, #line),       // comma inside quotes
            (["foo=\"unterminated, max-age=1"], cc(), #line),                        // open quote eats the rest
            (["x=\"a\\\"b\", no-store"], cc { $0.noStore = true }, #line),          // escaped quote
            (["=5, no-store"], cc { $0.noStore = true }, #line),                     // empty name skipped
        ]
        for c in cases {
            XCTAssertEqual(CacheControl(values: c.lines), c.expected, "\(c.lines)", line: c.line)
        }
    }

    func testReadsAllFieldLinesAndTheRightField() {
        let h = HTTPHeaders([("Cache-Control", "max-age=60"), ("CDN-Cache-Control", "max-age=600"),
                             ("cache-control", "public")])
        XCTAssertEqual(CacheControl(h), cc { $0.maxAge = 60; $0.isPublic = true })
        XCTAssertEqual(CacheControl(h, field: "CDN-Cache-Control"), cc { $0.maxAge = 600 })
    }

    func testPragmaNoCacheOnlyWithoutCacheControl() {
        let cases: [(HTTPHeaders, Bool)] = [
            (HTTPHeaders([("Pragma", "no-cache")]), true),
            (HTTPHeaders([("Pragma", "No-Cache")]), true),
            (HTTPHeaders([("Pragma", "no-cache"), ("Cache-Control", "max-age=5")]), false),
            (HTTPHeaders([("Pragma", "other")]), false),
            (HTTPHeaders(), false),
        ]
        for (h, noCache) in cases { XCTAssertEqual(CacheControl(request: h).noCache, noCache, "\(h)") }
    }

    func testResponseDirectivesTargeting() {
        let both = HTTPHeaders([("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=60")])
        let cdn = CachePolicyOptions(honorsCDNCacheControl: true)
        let cases: [(HTTPHeaders, CachePolicyOptions, CacheControl, Bool)] = [
            (both, CachePolicyOptions(), cc { $0.noStore = true }, false),           // forward mode: CDN field ignored
            (both, cdn, cc { $0.maxAge = 60 }, true),                                // reverse mode: replaces CC
            (HTTPHeaders([("Cache-Control", "max-age=5"), ("CDN-Cache-Control", "")]), cdn,
             cc { $0.maxAge = 5 }, false),                                          // empty target → fallback
            (HTTPHeaders([("Cache-Control", "max-age=5")]), cdn, cc { $0.maxAge = 5 }, false),
            (HTTPHeaders([("CDN-Cache-Control", "none")]), cdn, cc(), true),         // unknown directive still targets
            (HTTPHeaders([("Cache-Control", "max-age=5"), ("CDN-Cache-Control", "max-age=60"),
                          ("CDN-Cache-Control", "s-maxage=30")]), cdn,
             cc { $0.maxAge = 60; $0.sharedMaxAge = 30 }, true),                     // lines form one dictionary
        ]
        // RFC 9213 §2.1: a CDN-Cache-Control that is no Structured Field
        // Dictionary is ignored whole: Cache-Control governs.
        for invalid in ["Max-Age=60", "max-age=60s", "max-age=60,", "max-age = 60", "max-age=\"60", ", max-age=60",
                        "max-age=1234567890123456", "no-store, 1x", "max-age=?2", "max-age=60;", "   ",
                        // … and so is one with a known directive of the wrong type.
                        "s-maxage=\"60\"", "max-age=-1", "max-age=1.5", "max-age=tok", "stale-if-error=?1",
                        "no-store=5", "public=\"x\"", "private=5, max-age=60", "must-revalidate=:YQ==:"] {
            let h = HTTPHeaders([("Cache-Control", "max-age=5"), ("CDN-Cache-Control", invalid)])
            let d = ResponseDirectives(h, options: cdn)
            XCTAssertEqual(d.cacheControl, cc { $0.maxAge = 5 }, invalid)
            XCTAssertFalse(d.isTargeted, invalid)
        }
        for valid in ["max-age=60", "no-store, max-age=60", "max-age=60;a=1", "x=\"q\\\"\", max-age=60",
                      "x=:YWJj:, max-age=60", "x=?1, max-age=60", "x=1.5, max-age=60", "x=tok/en, max-age=60"] {
            let d = ResponseDirectives(HTTPHeaders([("CDN-Cache-Control", valid)]), options: cdn)
            XCTAssertTrue(d.isTargeted, valid)
        }
        // A Boolean false is the directive's absence; a field list is a String.
        let typed = ResponseDirectives(HTTPHeaders([("CDN-Cache-Control",
                                                     "no-store=?0, public=?1, private=\"Set-Cookie\", max-age=60")]),
                                       options: cdn)
        XCTAssertEqual(typed.cacheControl, cc { $0.isPublic = true; $0.privateFields = ["set-cookie"]; $0.maxAge = 60 })
        for (h, options, expected, targeted) in cases {
            let d = ResponseDirectives(h, options: options)
            XCTAssertEqual(d.cacheControl, expected, "\(h)")
            XCTAssertEqual(d.isTargeted, targeted, "\(h)")
        }
    }
}
