import Foundation
import HTTPCache
import XCTest

/// Issue #38 (its first part): players' telemetry (CTA-5004 CMCD), sent as a
/// `CMCD=` query argument or as `CMCD-*` request fields and changing with
/// every request, is never part of the cache key: requests that differ only
/// in it share one entry and one origin fetch, in every mode. On a miss the
/// origin still gets it as the player sent it.
final class CMCDKeyTests: XCTestCase {
    func testCMCDNeverSplitsTheCacheInEveryMode() throws {
        let directory = try TemporaryDirectory(prefix: "httpcache-cmcd")
        defer { directory.remove() }
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("seg"), withIntermediateDirectories: true)
        let segment = try TestFile.random(size: 50_000, seed: 21, in: root.appendingPathComponent("seg"), name: "s1.ts")
        // The origin says which CMCD-Request field it received (empty: none, and nginx leaves the field out).
        let origin = try NginxOrigin(root: root, extraServerConfig: """
            location /seg/ { add_header Cache-Control "max-age=600"; add_header X-Origin-Saw-CMCD "$http_cmcd_request"; }
            """)
        defer { origin.stop() }
        let firstQuery = "?CMCD=bl%3D1000%2Csid%3D%22a%22"
        let queries = [firstQuery, "?CMCD=bl%3D2000", "", "?CMCD=%3D%3Dnot%20cmcd", "?CMCD="]

        let proxies = TransparentProxies(in: directory)
        defer { proxies.close() }
        for mode in TransparentMode.allCases {
            origin.clearAccessLog()
            let (client, target) = try proxies.start(mode, base: origin.baseURL)
            for (index, query) in queries.enumerated() {
                // Fields too, varying, but not on the request without a query.
                let fields = query.isEmpty ? [] : [("CMCD-Request", "bl=\(index)"), ("CMCD-Session", "sid=\"s\"")]
                let response = try client.request(path: target("/seg/s1.ts" + query), headers: fields)
                XCTAssertEqual(response.status, 200, "\(mode) \(query)")
                XCTAssertBytes(response.body, equal: segment)
                if index == 0 {
                    XCTAssertEqual(response.header("X-Origin-Saw-CMCD"), "bl=0", "\(mode): the miss carried the player's fields")
                } else {
                    XCTAssertTrue(response.header("Cache-Status")?.hasPrefix("httpcache; hit") ?? false,
                                  "\(mode) \(query): \(response.header("Cache-Status") ?? "none")")
                }
            }
            let fetched = origin.accessLog(waitingFor: 1).filter { $0.uri.hasPrefix("/seg/s1.ts") }
            XCTAssertEqual(fetched.map(\.uri), ["/seg/s1.ts" + firstQuery], "\(mode): one fetch, its query as the player sent it")
            XCTAssertEqual(try XCTUnwrap(proxies.server).cachedResources().count, 1, "\(mode): one entry")
        }

        // Proxy URLs of origin URLs that differ only in CMCD share one entry too.
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("proxy-urls").path)
        configuration.port = 0
        let cache = try MediaCache(configuration: configuration)
        defer { cache.close() }
        try cache.serve()
        origin.clearAccessLog()
        for query in queries {
            let url = try cache.proxyURL(for: origin.url("/seg/s1.ts" + query))
            XCTAssertBytes(try RawHTTPClient.get(url: url, timeout: 20).body, equal: segment)
        }
        XCTAssertEqual(origin.accessLog(waitingFor: 1).filter { $0.uri.hasPrefix("/seg/s1.ts") }.map(\.uri),
                       ["/seg/s1.ts" + firstQuery], "proxy URLs: one fetch")
        XCTAssertEqual(cache.cachedResources().count, 1, "proxy URLs: one entry")
    }
}
