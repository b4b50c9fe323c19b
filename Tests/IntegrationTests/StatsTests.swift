import Foundation
import HTTPCache
import XCTest

/// What a person or a monitoring system reads: /stats, /metrics, the access
/// log and `httpcache stats`, after real traffic.
final class StatsTests: XCTestCase {
    func testStatsMetricsAndAccessLogCountRealTraffic() throws {
        let directory = try TemporaryDirectory(prefix: "httpcache-stats")
        let accessLog = directory.file("access.log").path
        let fixture = try ProxyFixture { $0.accessLogPath = accessLog }
        defer { fixture.stop() }
        let file = try fixture.file("movie.mp4", size: 300_000, seed: 9)
        XCTAssertBytes(try fixture.get("movie.mp4", range: "bytes=0-99999").body, equal: file, range: 0..<100_000)  // MISS
        XCTAssertBytes(try fixture.get("movie.mp4", range: "bytes=0-99999").body, equal: file, range: 0..<100_000)  // HIT
        XCTAssertBytes(try fixture.get("movie.mp4").body, equal: file)  // PARTIAL: the rest comes from the origin
        XCTAssertEqual(try RawHTTPClient.get(url: "http://127.0.0.1:\(fixture.server.servingPort)/nothing").status, 404)

        let stats = try RawHTTPClient.get(url: "http://127.0.0.1:\(fixture.server.servingPort)/stats")
        XCTAssertEqual(stats.status, 200)
        XCTAssertEqual(stats.header("Content-Type"), "application/json")
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(stats.body)) as? [String: Any])
        let byCache = try XCTUnwrap(json["requests_by_cache"] as? [String: Int])
        XCTAssertEqual(byCache["MISS"], 1)
        XCTAssertEqual(byCache["HIT"], 1)
        XCTAssertEqual(byCache["PARTIAL"], 1)
        XCTAssertEqual(byCache["BYPASS"], 1)
        let byStatus = try XCTUnwrap(json["requests_by_status"] as? [String: Int])
        XCTAssertEqual(byStatus["206"], 2)
        XCTAssertEqual(byStatus["200"], 1)
        XCTAssertEqual(byStatus["404"], 1)
        XCTAssertEqual(json["origin_requests"] as? Int, 2, "one miss and one gap")
        XCTAssertEqual(json["bytes_from_origin"] as? Int, 300_000)
        XCTAssertEqual(json["bytes_from_cache"] as? Int, 200_000, "the hit and the cached part of the partial")
        XCTAssertEqual(json["cache_entries"] as? Int, 1)
        XCTAssertEqual(json["cache_size_bytes"] as? Int, 300_000)

        let metrics = try RawHTTPClient.get(url: "http://127.0.0.1:\(fixture.server.servingPort)/metrics")
        XCTAssertEqual(metrics.status, 200)
        XCTAssertTrue(metrics.bodyString.contains("httpcache_cache_requests_total{cache=\"HIT\"} 1\n"), metrics.bodyString)
        XCTAssertTrue(metrics.bodyString.contains("httpcache_origin_requests_total 2\n"), metrics.bodyString)

        // The access log: one line per response, written off the loop within a moment.
        var lines: [String] = []
        XCTAssertTrue(TestTools.waitUntil(timeout: 3) {
            lines = ((try? String(contentsOfFile: accessLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            return lines.count >= 6
        }, "\(lines)")
        let movieLines = lines.filter { $0.contains("/movie.mp4") }
        XCTAssertEqual(movieLines.count, 3)
        XCTAssertTrue(movieLines[0].contains(" 206 ") && movieLines[0].contains(" MISS "), movieLines[0])
        XCTAssertTrue(movieLines[1].contains(" 206 ") && movieLines[1].contains(" HIT "), movieLines[1])
        XCTAssertTrue(movieLines[2].contains(" 200 ") && movieLines[2].contains(" PARTIAL "), movieLines[2])
        // Durations keep their fractions (they were whole milliseconds, mostly "0.000").
        XCTAssertTrue(movieLines.contains { !$0.hasSuffix(".000 - -") }, "\(movieLines)")
        let mode = try FileManager.default.attributesOfItem(atPath: accessLog)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)

        // `httpcache stats` finds the running proxy through the folder's lock file.
        let cli = try TestTools.run(CLITests.binary, ["stats", "--cache-dir", fixture.cacheDirectory, "--json"])
        XCTAssertTrue(cli.succeeded, cli.stderr)
        let printed = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(cli.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((printed["requests_by_cache"] as? [String: Int])?["HIT"], 1)
        let table = try TestTools.run(CLITests.binary, ["stats", "--cache-dir", fixture.cacheDirectory])
        XCTAssertTrue(table.succeeded, table.stderr)
        XCTAssertTrue(table.stdout.lowercased().contains("hit ratio"), table.stdout)
    }
}
