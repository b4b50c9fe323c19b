import CacheHTTP
import XCTest

/// The clock of these tests: the response arrives at `t`.
private let t = 1_000_000_000
private func date(_ s: Int) -> String { HTTPDate.string(epochSeconds: s) }
private let cdn = CachePolicyOptions(honorsCDNCacheControl: true)

private func stored(_ fields: [(String, String)], status: Int = 200, requestTime: Int = t) -> StoredHead {
    StoredHead(status: status, headers: HTTPHeaders(fields), requestTime: requestTime, responseTime: t)
}

final class FreshnessTests: XCTestCase {
    func testLifetime() {
        typealias Row = (status: Int, fields: [(String, String)], options: CachePolicyOptions,
                         seconds: Int, source: FreshnessSource, line: UInt)
        let plain = CachePolicyOptions()
        let floor300 = CachePolicyOptions(heuristicMinimum: 300)
        let needsLM = CachePolicyOptions(heuristicNeedsLastModified: true)
        let rows: [Row] = [
            (200, [("Cache-Control", "max-age=60")], plain, 60, .maxAge, #line),
            (200, [("Cache-Control", "max-age=0")], plain, 0, .maxAge, #line),
            (200, [("Cache-Control", "max-age=abc")], plain, 0, .maxAge, #line),            // invalid → stale
            (200, [("Cache-Control", "max-age=60, s-maxage=30")], plain, 30, .sharedMaxAge, #line),
            (200, [("Cache-Control", "max-age=60"), ("Date", date(t)), ("Expires", date(t + 900))], plain,
             60, .maxAge, #line),                                                            // max-age beats Expires
            (200, [("Date", date(t)), ("Expires", date(t + 100))], plain, 100, .expires, #line),
            (200, [("Date", date(t - 20)), ("Expires", date(t + 100))], plain, 120, .expires, #line),
            (200, [("Date", date(t)), ("Expires", date(t - 100))], plain, 0, .expires, #line), // in the past
            (200, [("Date", date(t)), ("Expires", "0")], plain, 0, .expires, #line),        // invalid = expired
            (200, [("Expires", date(t + 50))], plain, 50, .expires, #line),                 // no Date: receipt time
            (200, [("Date", "garbage"), ("Expires", date(t + 50))], plain, 50, .expires, #line),
            (200, [("Date", date(t)), ("Expires", date(t + 50)), ("Expires", date(t + 90))], plain,
             0, .expires, #line),                                                            // disagreeing duplicates
            (200, [("Date", date(t)), ("Expires", date(t + 50)), ("Expires", date(t + 50))], plain,
             50, .expires, #line),
            (200, [("Date", date(t)), ("Last-Modified", date(t - 1000))], plain, 100, .heuristic, #line),
            (200, [("Last-Modified", date(t - 1000))], plain, 100, .heuristic, #line),      // no Date
            (200, [("Date", date(t)), ("Last-Modified", date(t - 100 * 86_400))], plain,
             86_400, .heuristic, #line),                                                     // capped at a day
            (200, [("Date", date(t)), ("Last-Modified", date(t - 100 * 86_400))],
             CachePolicyOptions(heuristicCap: 3600), 3600, .heuristic, #line),
            (404, [("Date", date(t)), ("Last-Modified", date(t - 1000))], plain, 100, .heuristic, #line),
            // A heuristic minimum (the media cache's default) lifts small and missing heuristics…
            (200, [("Date", date(t)), ("Last-Modified", date(t - 1000))], floor300, 300, .heuristic, #line),
            (200, [("Date", date(t)), ("Last-Modified", date(t - 10_000))], floor300, 1000, .heuristic, #line),
            (200, [("Date", date(t))], floor300, 300, .heuristic, #line),                   // no Last-Modified
            (200, [("Date", date(t))], plain, 0, .none, #line),
            // The forward and reverse modes: a heuristic only with Last-Modified (RFC 9111 §4.2.2).
            (200, [("Date", date(t))], needsLM, 0, .none, #line),
            (200, [("Date", date(t)), ("ETag", "\"a\"")], needsLM, 0, .none, #line),     // a validator is not enough
            (404, [("Date", date(t))], needsLM, 0, .none, #line),
            (200, [("Date", date(t)), ("Last-Modified", date(t - 1000))], needsLM, 100, .heuristic, #line),
            (200, [("Date", date(t)), ("Last-Modified", date(t - 1000))],
             CachePolicyOptions(heuristicMinimum: 300, heuristicNeedsLastModified: true), 300, .heuristic, #line),
            // … never above the cap (`--revalidate-after` sets both), never for explicit freshness,
            // never for statuses not heuristically cacheable.
            (200, [("Date", date(t)), ("Last-Modified", date(t - 100_000))],
             CachePolicyOptions(heuristicCap: 30, heuristicMinimum: 30), 30, .heuristic, #line),
            (200, [("Date", date(t))], CachePolicyOptions(heuristicCap: 0, heuristicMinimum: 300), 0, .none, #line),
            (200, [("Cache-Control", "max-age=5")], floor300, 5, .maxAge, #line),
            (302, [("Date", date(t))], floor300, 0, .none, #line),
            (302, [("Date", date(t)), ("Last-Modified", date(t - 1000))], plain, 0, .none, #line), // not by default
            (500, [("Date", date(t)), ("Last-Modified", date(t - 1000))], plain, 0, .none, #line),
            (200, [("Date", date(t)), ("Last-Modified", date(t - 1000)), ("Expires", date(t + 5))], plain,
             5, .expires, #line),                                                            // explicit: no heuristic
            (200, [("Date", date(t)), ("Last-Modified", date(t + 1000))], plain, 0, .none, #line),  // LM in future
            (200, [("Date", date(t)), ("Last-Modified", "yesterday")], plain, 0, .none, #line),
            (200, [], plain, 0, .none, #line),
            (200, [("Cache-Control", "max-age=60"), ("CDN-Cache-Control", "max-age=600")], plain,
             60, .maxAge, #line),
            (200, [("Cache-Control", "max-age=60"), ("CDN-Cache-Control", "max-age=600")], cdn,
             600, .maxAge, #line),                                                           // RFC 9213 precedence
            (200, [("Date", date(t)), ("Expires", date(t + 100)), ("CDN-Cache-Control", "must-revalidate")], cdn,
             0, .none, #line),                                                               // Expires ignored
            (200, [("Cache-Control", "s-maxage=5"), ("CDN-Cache-Control", "max-age=600")], cdn,
             600, .maxAge, #line),
        ]
        for r in rows {
            let l = Freshness.lifetime(status: r.status, headers: HTTPHeaders(r.fields), responseTime: t,
                                       options: r.options)
            XCTAssertEqual(l, FreshnessLifetime(seconds: r.seconds, source: r.source), "\(r.fields)", line: r.line)
        }
    }

    func testCurrentAge() {
        typealias Row = (fields: [(String, String)], requestTime: Int, now: Int, age: Int, line: UInt)
        let rows: [Row] = [
            ([], t, t, 0, #line),
            ([], t, t + 10, 10, #line),                                        // resident time
            ([("Date", date(t - 5))], t, t, 5, #line),                         // apparent age
            ([("Date", date(t + 50))], t, t, 0, #line),                        // Date ahead of us: no negative age
            ([("Age", "30")], t - 2, t, 32, #line),                            // age_value + response_delay
            ([("Age", "30"), ("Date", date(t - 100))], t, t, 100, #line),      // the larger correction wins
            ([("Age", "30"), ("Date", date(t - 10))], t - 4, t + 6, 40, #line),
            ([("Age", "abc")], t, t, 0, #line),                                // invalid Age ignored
            ([("Age", "-5")], t, t, 0, #line),
            ([("Age", "1.5")], t, t, 0, #line),                                // not delta-seconds: ignored
            ([("Age", "")], t, t, 0, #line),
            ([("Age", "12"), ("Age", "40")], t, t, 12, #line),                 // repeated: the first
            ([("Age", "10, 20")], t, t, 10, #line),                            // first member only
            ([("Age", " 7 ")], t, t, 7, #line),
            ([("Age", "99999999999")], t, t, 2_147_483_648, #line),            // clamped
            ([], t, t - 100, 0, #line),                                         // clock went back
            ([], t + 5, t, 0, #line),                                           // request after response: no delay
            ([("Date", "not a date")], t - 3, t + 1, 4, #line),
        ]
        for r in rows {
            let s = stored(r.fields, requestTime: r.requestTime)
            XCTAssertEqual(Freshness.currentAge(s, now: r.now), r.age, "\(r.fields)", line: r.line)
        }
    }

    func testReuse() {
        typealias Row = (status: Int, fields: [(String, String)], request: [(String, String)], now: Int,
                         expected: ReuseDecision, line: UInt)
        let cc = "Cache-Control"
        let rows: [Row] = [
            (200, [(cc, "max-age=60")], [], t + 10, .fresh, #line),
            (200, [(cc, "max-age=60")], [], t + 59, .fresh, #line),
            (200, [(cc, "max-age=60")], [], t + 60, .revalidate(.stale), #line),          // lifetime > age is strict
            (200, [(cc, "max-age=0")], [], t, .revalidate(.stale), #line),
            (200, [(cc, "max-age=60"), ("Age", "50")], [], t + 10, .revalidate(.stale), #line),
            (200, [(cc, "max-age=60")], [], t + 30, .fresh, #line),                       // no Date
            (200, [("Date", date(t)), ("Expires", date(t - 10))], [], t, .revalidate(.stale), #line),
            (200, [("Date", date(t)), ("Expires", "-1")], [], t, .revalidate(.stale), #line),
            (200, [("Date", date(t)), ("Last-Modified", date(t - 1000))], [], t + 50, .fresh, #line),
            (302, [("Date", date(t)), ("Last-Modified", date(t - 1000))], [], t + 50, .revalidate(.stale), #line),
            (200, [(cc, "no-cache, max-age=60")], [], t, .revalidate(.responseNoCache), #line),
            (200, [(cc, "max-age=60")], [(cc, "no-cache")], t, .revalidate(.requestNoCache), #line),
            (200, [(cc, "max-age=60")], [("Pragma", "no-cache")], t, .revalidate(.requestNoCache), #line),
            (200, [(cc, "max-age=60")], [(cc, "max-age=5")], t + 10, .revalidate(.olderThanRequestMaxAge), #line),
            (200, [(cc, "max-age=60")], [(cc, "max-age=0")], t, .fresh, #line),
            (200, [(cc, "max-age=60")], [(cc, "min-fresh=20")], t + 45, .revalidate(.notFreshEnough), #line),
            (200, [(cc, "max-age=60")], [(cc, "min-fresh=20")], t + 30, .fresh, #line),
            (200, [(cc, "max-age=60")], [(cc, "max-stale")], t + 100_000, .staleAcceptedByClient, #line),
            (200, [(cc, "max-age=60")], [(cc, "max-stale=10")], t + 70, .staleAcceptedByClient, #line),
            (200, [(cc, "max-age=60")], [(cc, "max-stale=10")], t + 71, .revalidate(.stale), #line),
            (200, [(cc, "max-age=60, must-revalidate")], [(cc, "max-stale")], t + 70, .revalidate(.stale), #line),
            (200, [(cc, "max-age=60, proxy-revalidate")], [(cc, "max-stale")], t + 70, .revalidate(.stale), #line),
            (200, [(cc, "s-maxage=60")], [(cc, "max-stale")], t + 70, .revalidate(.stale), #line),  // implies proxy-revalidate
            (200, [(cc, "max-age=60, stale-while-revalidate=30")], [], t + 90, .staleWhileRevalidate, #line),
            (200, [(cc, "max-age=60, stale-while-revalidate=30")], [], t + 91, .revalidate(.stale), #line),
            (200, [(cc, "max-age=60, stale-while-revalidate=30, must-revalidate")], [], t + 70,
             .revalidate(.stale), #line),
            (200, [(cc, "s-maxage=60, stale-while-revalidate=30")], [], t + 70, .staleWhileRevalidate, #line),
            (200, [(cc, "max-age=60, stale-while-revalidate=30")], [(cc, "no-cache")], t + 70,
             .revalidate(.requestNoCache), #line),
            (200, [(cc, "max-age=60")], [(cc, "only-if-cached")], t + 10, .fresh, #line),
            (200, [(cc, "max-age=60")], [(cc, "only-if-cached")], t + 70, .gatewayTimeout, #line),
            (200, [(cc, "no-cache")], [(cc, "only-if-cached")], t, .gatewayTimeout, #line),
            (200, [(cc, "max-age=60")], [(cc, "only-if-cached, max-stale")], t + 70, .staleAcceptedByClient, #line),
            (200, [(cc, "max-age=60, stale-while-revalidate=30")], [(cc, "only-if-cached")], t + 70,
             .staleWhileRevalidate, #line),
        ]
        for r in rows {
            let s = stored(r.fields, status: r.status)
            XCTAssertEqual(Freshness.reuse(s, requestHeaders: HTTPHeaders(r.request), now: r.now), r.expected,
                           "\(r.fields) \(r.request) +\(r.now - t)", line: r.line)
        }
    }

    /// Fresh while the age is below the lifetime, stale from the second they meet.
    func testIsFreshAtTheBoundaries() {
        let rows: [(fields: [(String, String)], now: Int, fresh: Bool, line: UInt)] = [
            ([("Cache-Control", "max-age=60")], t + 59, true, #line),
            ([("Cache-Control", "max-age=60")], t + 60, false, #line),
            ([("Cache-Control", "max-age=60"), ("Age", "30")], t + 29, true, #line),   // the origin's age counts
            ([("Cache-Control", "max-age=60"), ("Age", "30")], t + 30, false, #line),
            ([("Date", date(t)), ("Expires", date(t + 100))], t + 99, true, #line),
            ([("Date", date(t)), ("Expires", date(t + 100))], t + 100, false, #line),
            ([], t, false, #line),                                                   // no freshness information
        ]
        for r in rows {
            XCTAssertEqual(Freshness.isFresh(stored(r.fields), now: r.now), r.fresh, "\(r.fields) +\(r.now - t)", line: r.line)
        }
    }

    func testReuseInReverseModeFollowsCDNCacheControl() {
        let s = stored([("Cache-Control", "no-cache"), ("CDN-Cache-Control", "max-age=60")])
        XCTAssertEqual(Freshness.reuse(s, requestHeaders: HTTPHeaders(), now: t + 10, options: cdn), .fresh)
        XCTAssertEqual(Freshness.reuse(s, requestHeaders: HTTPHeaders(), now: t + 10), .revalidate(.responseNoCache))
    }

    func testMayServeStale() {
        typealias Row = (fields: [(String, String)], request: [(String, String)], now: Int, cause: StaleCause,
                         options: CachePolicyOptions, expected: Bool, line: UInt)
        let cc = "Cache-Control"
        let plain = CachePolicyOptions()
        let rows: [Row] = [
            ([(cc, "max-age=60")], [], t + 10, .originError, plain, true, #line),            // still fresh
            ([(cc, "max-age=60")], [], t + 1000, .disconnected, plain, true, #line),         // §4.2.4 offline
            ([(cc, "max-age=60")], [], t + 1000, .originError, plain, false, #line),         // no permission
            ([], [], t + 1000, .disconnected, plain, true, #line),
            ([(cc, "max-age=60, must-revalidate")], [], t + 1000, .disconnected, plain, false, #line),
            ([(cc, "max-age=60, proxy-revalidate")], [], t + 1000, .disconnected, plain, false, #line),
            ([(cc, "no-cache")], [], t + 1000, .disconnected, plain, false, #line),
            ([(cc, "s-maxage=60")], [], t + 1000, .disconnected, plain, false, #line),       // implied proxy-revalidate
            ([(cc, "s-maxage=60, stale-if-error=2000")], [], t + 1000, .disconnected, plain, true, #line),
            ([(cc, "max-age=60, stale-if-error=600")], [], t + 660, .originError, plain, true, #line),  // window edge
            ([(cc, "max-age=60, stale-if-error=600")], [], t + 661, .originError, plain, false, #line),
            ([(cc, "max-age=60, stale-if-error=600")], [], t + 661, .disconnected, plain, true, #line),
            ([(cc, "max-age=60, stale-if-error=600, must-revalidate")], [], t + 100, .originError, plain, false, #line),
            ([(cc, "max-age=60")], [(cc, "stale-if-error=1000")], t + 1000, .originError, plain, true, #line),
            ([(cc, "max-age=60")], [(cc, "stale-if-error=10")], t + 1000, .originError, plain, false, #line),
            ([(cc, "s-maxage=60")], [(cc, "stale-if-error=1000")], t + 1000, .originError, plain, false, #line),
            ([(cc, "max-age=60")], [(cc, "max-stale")], t + 1000, .originError, plain, true, #line),
            ([(cc, "max-age=60")], [(cc, "max-stale=10")], t + 1000, .originError, plain, false, #line),
            ([(cc, "max-age=60")], [(cc, "no-cache")], t + 1000, .disconnected, plain, false, #line),
            ([(cc, "max-age=60"), ("CDN-Cache-Control", "max-age=60, must-revalidate")], [], t + 1000,
             .disconnected, cdn, false, #line),
            ([(cc, "max-age=60"), ("CDN-Cache-Control", "max-age=60, must-revalidate")], [], t + 1000,
             .disconnected, plain, true, #line),
        ]
        for r in rows {
            XCTAssertEqual(Freshness.mayServeStale(stored(r.fields), requestHeaders: HTTPHeaders(r.request), now: r.now,
                                                   cause: r.cause, options: r.options),
                           r.expected, "\(r.fields) \(r.request) \(r.cause)", line: r.line)
        }
    }

    func testStoredHeadDropsHopByHopAndQualifiedFields() {
        let response = HTTPResponseHead(status: 200, headers: HTTPHeaders([
            ("Connection", "close, X-Conn"), ("X-Conn", "1"), ("Transfer-Encoding", "chunked"),
            ("Cache-Control", "private=\"Set-Cookie\", no-cache=\"X-Secret\", max-age=60"),
            ("Set-Cookie", "a=1"), ("X-Secret", "s"), ("ETag", "\"v1\""), ("Age", "5"),
        ]))
        let s = StoredHead(storing: response, requestTime: t - 1, responseTime: t)
        XCTAssertEqual(s.headers, HTTPHeaders([
            ("Cache-Control", "private=\"Set-Cookie\", no-cache=\"X-Secret\", max-age=60"),
            ("ETag", "\"v1\""), ("Age", "5"),
        ]))
        XCTAssertEqual(s.status, 200)
        XCTAssertEqual(s.headersForServing(now: t + 10)["Age"], "16")   // 5 + 1 delay + 10 resident
        XCTAssertEqual(s.headersForServing(now: t + 10).values("Age").count, 1)
    }
}
