import CacheHTTP
import XCTest

final class StorabilityTests: XCTestCase {
    private typealias Row = (method: String, request: [(String, String)], status: Int,
                             response: [(String, String)], expected: StorageDecision, line: UInt)

    func testDecide() {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        let auth = ("Authorization", "Bearer x")
        let rows: [Row] = [
            ("GET", [], 200, [], .store, #line),                                          // cacheable by default
            ("HEAD", [], 200, [], .store, #line),
            ("POST", [], 200, [("Cache-Control", "max-age=60")], .doNotStore(.method), #line),
            ("PUT", [], 200, [], .doNotStore(.method), #line),
            ("get", [], 200, [], .doNotStore(.method), #line),                           // methods are case-sensitive
            ("GET", [("Cache-Control", "no-store")], 200, [], .doNotStore(.requestNoStore), #line),
            ("GET", [], 100, [], .doNotStore(.notFinal), #line),
            ("GET", [], 304, [("Cache-Control", "max-age=60")], .doNotStore(.notModified), #line),
            ("GET", [], 200, [("Cache-Control", "no-store")], .doNotStore(.responseNoStore), #line),
            ("GET", [], 200, [("Cache-Control", "max-age=60, NO-STORE")], .doNotStore(.responseNoStore), #line),
            ("GET", [], 200, [("Cache-Control", "must-understand, no-store")], .store, #line),  // §5.2.2.3
            ("GET", [], 299, [("Cache-Control", "must-understand, no-store, max-age=5")],
             .doNotStore(.mustUnderstandUnknownStatus), #line),
            ("GET", [], 200, [("Cache-Control", "private")], .doNotStore(.private), #line),
            ("GET", [], 200, [("Cache-Control", "public, private")], .doNotStore(.private), #line),
            ("GET", [], 200, [("Cache-Control", "private=\"X-User\"")], .store, #line),  // field form: store the rest
            ("GET", [auth], 200, [], .doNotStore(.authorization), #line),
            ("GET", [auth], 200, [("Cache-Control", "max-age=60")], .doNotStore(.authorization), #line),
            ("GET", [auth], 200, [("Cache-Control", "s-maxage=60")], .store, #line),     // §3.5 exceptions
            ("GET", [auth], 200, [("Cache-Control", "public")], .store, #line),
            ("GET", [auth], 200, [("Cache-Control", "must-revalidate")], .store, #line),
            ("GET", [], 200, [("Set-Cookie", "a=1")], .doNotStore(.setCookie), #line),
            ("GET", [], 200, [("Set-Cookie", "a=1"), ("Cache-Control", "public")], .store, #line),
            ("GET", [], 200, [("Set-Cookie", "a=1"), ("Cache-Control", "private=\"Set-Cookie\"")], .store, #line),
            ("GET", [], 200, [("Set-Cookie", "a=1"), ("Cache-Control", "no-cache=\"set-cookie\"")], .store, #line),
            ("GET", [], 200, [("Vary", "*")], .doNotStore(.varyAll), #line),
            ("GET", [], 200, [("Vary", "Accept-Encoding, *")], .doNotStore(.varyAll), #line),
            ("GET", [], 200, [("Vary", "Accept-Encoding")], .store, #line),
            ("GET", [], 206, [], .store, #line),                                          // partial content is kept
            ("GET", [], 404, [], .store, #line),
            ("GET", [], 501, [], .store, #line),
            ("GET", [], 302, [], .doNotStore(.statusNotCacheable), #line),
            ("GET", [], 302, [("Cache-Control", "max-age=60")], .store, #line),           // explicit freshness
            ("GET", [], 307, [("Expires", date)], .store, #line),
            ("GET", [], 500, [("Cache-Control", "s-maxage=5")], .store, #line),
            ("GET", [], 403, [("Cache-Control", "public")], .store, #line),
            ("GET", [], 500, [], .doNotStore(.statusNotCacheable), #line),
            ("GET", [], 503, [("Cache-Control", "no-cache")], .doNotStore(.statusNotCacheable), #line),
            ("GET", [], 200, [("Cache-Control", "no-cache")], .store, #line),             // no-cache may be stored
        ]
        // Every reason not to store is met by some row.
        let met = Set(rows.compactMap { row -> String? in
            if case .doNotStore(let reason) = row.expected { return reason.rawValue } else { return nil }
        })
        XCTAssertEqual(met, Set(NotStorableReason.allCases.map(\.rawValue)))
        for r in rows {
            let d = Storability.decide(method: r.method, requestHeaders: HTTPHeaders(r.request), status: r.status,
                                       responseHeaders: HTTPHeaders(r.response))
            XCTAssertEqual(d, r.expected, "\(r.method) \(r.request) \(r.status) \(r.response)", line: r.line)
        }
    }

    func testCDNCacheControlInReverseMode() {
        let cdn = CachePolicyOptions(honorsCDNCacheControl: true)
        let rows: [(response: [(String, String)], options: CachePolicyOptions, expected: StorageDecision, line: UInt)] = [
            ([("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=60")], cdn, .store, #line),
            ([("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=60")], CachePolicyOptions(),
             .doNotStore(.responseNoStore), #line),
            ([("Cache-Control", "max-age=60"), ("CDN-Cache-Control", "no-store")], cdn,
             .doNotStore(.responseNoStore), #line),
            ([("CDN-Cache-Control", "private")], cdn, .doNotStore(.private), #line),
        ]
        for r in rows {
            let d = Storability.decide(method: "GET", requestHeaders: HTTPHeaders(), status: 200,
                                       responseHeaders: HTTPHeaders(r.response), options: r.options)
            XCTAssertEqual(d, r.expected, "\(r.response)", line: r.line)
        }
        // Expires does not count as explicit freshness once the targeted field governs.
        let expires = HTTPHeaders([("CDN-Cache-Control", "must-revalidate"), ("Expires", "Sun, 06 Nov 1994 08:49:37 GMT")])
        XCTAssertEqual(Storability.decide(method: "GET", requestHeaders: HTTPHeaders(), status: 302,
                                          responseHeaders: expires, options: cdn),
                       .doNotStore(.statusNotCacheable))
        XCTAssertEqual(Storability.decide(method: "GET", requestHeaders: HTTPHeaders(), status: 302,
                                          responseHeaders: expires), .store)
    }

    func testReasonsHaveLogText() {
        let all: [NotStorableReason] = [.method, .requestNoStore, .notFinal, .notModified, .mustUnderstandUnknownStatus,
                                        .responseNoStore, .private, .authorization, .setCookie, .varyAll,
                                        .statusNotCacheable]
        XCTAssertEqual(Set(all.map(\.rawValue)).count, all.count)
        XCTAssertFalse(all.contains { $0.rawValue.isEmpty })
    }
}
