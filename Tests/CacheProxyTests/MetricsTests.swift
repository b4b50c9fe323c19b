import CacheHTTP
import CacheIO
import CacheLoading
import Foundation
import Glibc
import XCTest
@testable import CacheProxy

final class MetricsTests: XCTestCase {
    private func sample() -> MetricsSnapshot {
        var metrics = ProxyMetrics()
        metrics.recordResponse(status: 200, cache: .hit, word: "hit")
        metrics.recordResponse(status: 206, cache: .hit, word: "hit")
        metrics.recordResponse(status: 206, cache: .partial, word: "partial")
        metrics.recordResponse(status: 200, cache: .miss, word: "uri-miss")
        metrics.recordResponse(status: 404, cache: .bypass, word: "bypass")
        metrics.addBytesFromCache(1000)
        var engine = EngineCounters()
        engine.bytesFromOrigin = 3000
        engine.originRequests = 2
        engine.originErrors = [.timeout: 2, .status5xx: 1]
        engine.activeDownloads = 1
        engine.evictions = 3
        return MetricsSnapshot(proxy: metrics, engine: engine,
                               openConnections: 1, cacheSizeBytes: 123_456, cacheEntries: 7,
                               uptimeSeconds: 12.5, accessLogDropped: 2)
    }

    func testCountersAndGauges() {
        let snapshot = sample()
        XCTAssertEqual(snapshot.proxy.requestsByStatus, [200: 2, 206: 2, 404: 1])
        XCTAssertEqual(snapshot.proxy.requestsByCache, [.hit: 2, .partial: 1, .miss: 1, .bypass: 1])
        XCTAssertEqual(snapshot.requestsTotal, 5)
        XCTAssertEqual(snapshot.hitRatio, 0.5)  // bypass does not count
        XCTAssertEqual(snapshot.byteHitRatio, 0.25)
        XCTAssertEqual(snapshot.proxy.bytesFromCache, 1000)
        XCTAssertEqual(snapshot.engine.bytesFromOrigin, 3000)
        XCTAssertEqual(snapshot.engine.originRequests, 2)
        XCTAssertEqual(snapshot.engine.originErrors, [.timeout: 2, .status5xx: 1])
        XCTAssertEqual(snapshot.openConnections, 1)
        XCTAssertEqual(snapshot.engine.activeDownloads, 1)
        XCTAssertEqual(snapshot.engine.evictions, 3)
        XCTAssertEqual(snapshot.cacheSizeBytes, 123_456)
        XCTAssertEqual(snapshot.cacheEntries, 7)
        XCTAssertEqual(snapshot.accessLogDropped, 2)
    }

    func testEmptySnapshotHasNoHitRatio() {
        XCTAssertEqual(MetricsSnapshot().hitRatio, 0)
    }

    func testCacheStatusClassification() {
        XCTAssertEqual(CacheStatus.classify(fromCache: 10, fromOrigin: 0), .hit)
        XCTAssertEqual(CacheStatus.classify(fromCache: 0, fromOrigin: 0), .hit)
        XCTAssertEqual(CacheStatus.classify(fromCache: 0, fromOrigin: 10), .miss)
        XCTAssertEqual(CacheStatus.classify(fromCache: 5, fromOrigin: 10), .partial)
        XCTAssertEqual(CacheStatus.allCases.map(\.rawValue), ["HIT", "MISS", "PARTIAL", "BYPASS"])
    }

    func testOriginErrorCodes() {
        let table: [(LoadError, String?)] = [
            (.originStatus(status: 503, headers: HTTPHeaders(), body: []), "status_5xx"),
            (.originStatus(status: 404, headers: HTTPHeaders(), body: []), "status_4xx"),
            (.upstream(.timeout("read")), "timeout"),
            (.upstream(.resolve("x")), "resolve"),
            (.upstream(.connect("refused")), "connect"),
            (.upstream(.closedEarly("eof")), "closed"),
            (.upstream(.tls("expired")), "tls"),
            (.upstream(.protocolViolation("head")), "protocol"),
            (.upstream(.redirect("loop")), "redirect"),
            (.upstream(.configuration("ca")), "configuration"),
            (.mismatch("range"), "mismatch"),
            (.changed("etag"), "changed"),
            (.storage("disk full"), nil),
        ]
        for (error, code) in table {
            XCTAssertEqual(OriginErrorCode(error)?.rawValue, code, "\(error)")
        }
    }

    /// Each loop counts its own responses; /stats adds them up.
    func testLoopsAddUp() throws {
        var engineLoop = ProxyMetrics()
        engineLoop.recordResponse(status: 200, cache: .miss)
        engineLoop.addBytesFromCache(10)
        var other = ProxyMetrics()
        other.recordResponse(status: 200, cache: .hit)
        other.recordResponse(status: 206, cache: .hit)
        other.addBytesFromCache(500)
        other.loopHandoffs = 3
        other.hitsOnOtherLoops = 2
        other.hitsFromMemory = 7
        other.connectionsBalanced = 5
        other.clientSendTimeouts = 1
        engineLoop.add(other)
        let snapshot = MetricsSnapshot(proxy: engineLoop, engine: EngineCounters(),
                                       openConnections: 4, cacheSizeBytes: 0, cacheEntries: 0,
                                       uptimeSeconds: 1, loops: 2)
        XCTAssertEqual(snapshot.proxy.requestsByStatus, [200: 2, 206: 1])
        XCTAssertEqual(snapshot.proxy.requestsByCache, [.hit: 2, .miss: 1])
        XCTAssertEqual(snapshot.proxy.bytesFromCache, 510)
        XCTAssertEqual(engineLoop.clientSendTimeouts, 1)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(snapshot.json().utf8)) as? [String: Any])
        XCTAssertEqual((object["loops"] as? NSNumber)?.intValue, 2)
        XCTAssertEqual((object["loop_handoffs"] as? NSNumber)?.intValue, 3)
        XCTAssertEqual((object["hits_on_other_loops"] as? NSNumber)?.intValue, 2)
        XCTAssertTrue(snapshot.prometheus().contains("\nhttpcache_loop_handoffs_total 3\n"))
        XCTAssertTrue(snapshot.prometheus().contains("\nhttpcache_hits_on_other_loops_total 2\n"))
        XCTAssertEqual((object["hits_from_memory"] as? NSNumber)?.intValue, 7)
        XCTAssertTrue(snapshot.prometheus().contains("\nhttpcache_hits_from_memory_total 7\n"))
        XCTAssertEqual((object["connections_balanced"] as? NSNumber)?.intValue, 5)
        XCTAssertTrue(snapshot.prometheus().contains("\nhttpcache_connections_balanced_total 5\n"))
    }

    /// 200 and 206 hits are counted apart from the dictionaries (the hit
    /// path's share of the cost): every view and every merge still sees them.
    func testHitsCountedApartShowInEveryViewAndMerge() {
        var a = ProxyMetrics()
        var b = ProxyMetrics()
        for _ in 0..<3 { a.recordResponse(status: 200, cache: .hit, word: "hit") }
        a.recordResponse(status: 206, cache: .hit, word: "hit")
        a.recordResponse(status: 304, cache: .hit, word: "hit")
        b.recordResponse(status: 206, cache: .hit, word: "hit")
        b.recordResponse(status: 200, cache: .miss, word: "uri-miss")
        XCTAssertEqual(a.requestsByStatus, [200: 3, 206: 1, 304: 1])
        XCTAssertEqual(a.requestsByCache, [.hit: 5])
        XCTAssertEqual(a.requestsByCacheStatus, ["hit": 5])
        a.add(b)
        XCTAssertEqual(a.requestsByStatus, [200: 4, 206: 2, 304: 1])
        XCTAssertEqual(a.requestsByCache, [.hit: 6, .miss: 1])
        XCTAssertEqual(a.requestsByCacheStatus, ["hit": 6, "uri-miss": 1])
        let snapshot = MetricsSnapshot(proxy: a, engine: EngineCounters(),
                                       openConnections: 0, cacheSizeBytes: 0, cacheEntries: 0,
                                       uptimeSeconds: 1)
        XCTAssertEqual(snapshot.requestsTotal, 7)
        XCTAssertEqual(snapshot.proxy.requestsByCacheStatus, ["hit": 6, "uri-miss": 1])
        XCTAssertEqual(snapshot.hitRatio, 6.0 / 7.0)
    }

    func testJSONIsValidAndHasEveryField() throws {
        let text = sample().json()
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let expected = ["uptime_seconds", "requests_total", "requests_by_status", "requests_by_cache", "hit_ratio",
                        "bytes_from_cache", "bytes_from_origin", "origin_requests", "origin_errors", "open_connections",
                        "active_downloads", "evictions", "cache_size_bytes", "cache_entries", "access_log_dropped",
                        "loops", "loop_handoffs", "hits_on_other_loops", "hits_from_memory", "connections_balanced",
                        "requests_by_cache_status", "cmcd", "prefetch"]
        XCTAssertEqual(Set(object.keys), Set(expected))
        let byWord = try XCTUnwrap(object["requests_by_cache_status"] as? [String: Int])
        XCTAssertEqual(byWord, ["hit": 2, "partial": 1, "uri-miss": 1, "bypass": 1, "method": 0, "vary-miss": 0,
                                "stale": 0, "request": 0], "every word, always")
        XCTAssertEqual((object["uptime_seconds"] as? NSNumber)?.doubleValue, 12.5)
        XCTAssertEqual((object["requests_total"] as? NSNumber)?.intValue, 5)
        XCTAssertEqual((object["hit_ratio"] as? NSNumber)?.doubleValue, 0.5)
        let byStatus = try XCTUnwrap(object["requests_by_status"] as? [String: NSNumber])
        XCTAssertEqual(byStatus.mapValues(\.intValue), ["200": 2, "206": 2, "404": 1])
        let byCache = try XCTUnwrap(object["requests_by_cache"] as? [String: NSNumber])
        XCTAssertEqual(byCache.mapValues(\.intValue), ["HIT": 2, "MISS": 1, "PARTIAL": 1, "BYPASS": 1])
        let errors = try XCTUnwrap(object["origin_errors"] as? [String: NSNumber])
        XCTAssertEqual(errors.mapValues(\.intValue), ["timeout": 2, "status_5xx": 1])
        XCTAssertEqual((object["cache_size_bytes"] as? NSNumber)?.intValue, 123_456)
        XCTAssertEqual((object["access_log_dropped"] as? NSNumber)?.intValue, 2)
    }

    func testJSONOfAnEmptySnapshotAndHostileText() throws {
        XCTAssertNotNil(try JSONSerialization.jsonObject(with: Data(MetricsSnapshot().json().utf8)))
        let hostile = try JSONSerialization.jsonObject(with: Data(JSONText.string("a\"b\\c\nd").utf8), options: .fragmentsAllowed)
        XCTAssertEqual(hostile as? String, "a\"b\\c\nd")
        var snapshot = MetricsSnapshot()
        snapshot.uptimeSeconds = .infinity
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(snapshot.json().utf8)) as? [String: Any])
        XCTAssertEqual((object["uptime_seconds"] as? NSNumber)?.doubleValue, 0)
    }

    func testDecimalFormatting() {
        XCTAssertEqual(MetricsSnapshot.decimal(12.5, digits: 3), "12.500")
        XCTAssertEqual(MetricsSnapshot.decimal(0.00049, digits: 3), "0.000")
        XCTAssertEqual(MetricsSnapshot.decimal(0.0005, digits: 3), "0.001")
        XCTAssertEqual(MetricsSnapshot.decimal(-1.25, digits: 1), "-1.3")
        XCTAssertEqual(MetricsSnapshot.decimal(7, digits: 0), "7")
        XCTAssertEqual(MetricsSnapshot.decimal(.nan, digits: 2), "0")
    }

    // MARK: Prometheus

    /// Checks the exposition format line by line; returns the samples by series.
    private func parsePrometheus(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> [String: String] {
        XCTAssertTrue(text.hasSuffix("\n"), "ends with a line feed", file: file, line: line)
        var help: Set<String> = []
        var type: [String: String] = [:]
        var samples: [String: String] = [:]
        let namePattern = "[a-zA-Z_:][a-zA-Z0-9_:]*"
        let labelValue = #""(?:[^"\\\n]|\\\\|\\"|\\n)*""#
        let samplePattern = try! NSRegularExpression(
            pattern: "^(\(namePattern))(\\{[a-zA-Z_][a-zA-Z0-9_]*=\(labelValue)(?:,[a-zA-Z_][a-zA-Z0-9_]*=\(labelValue))*\\})? (-?[0-9]+(?:\\.[0-9]+)?)$")
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            let current = String(raw)
            if current.isEmpty { continue }
            if current.hasPrefix("# HELP ") {
                help.insert(String(current.dropFirst(7).prefix { $0 != " " }))
            } else if current.hasPrefix("# TYPE ") {
                let parts = current.dropFirst(7).split(separator: " ")
                XCTAssertEqual(parts.count, 2, current, file: file, line: line)
                XCTAssertTrue(["counter", "gauge", "histogram"].contains(String(parts[1])), current, file: file, line: line)
                type[String(parts[0])] = String(parts[1])
            } else if current.hasPrefix("#") {
                continue
            } else {
                let range = NSRange(current.startIndex..., in: current)
                guard let match = samplePattern.firstMatch(in: current, range: range) else {
                    XCTFail("not a sample line: \(current)", file: file, line: line)
                    continue
                }
                var name = String(current[Range(match.range(at: 1), in: current)!])
                // A histogram's samples: <family>_bucket{le=…}, <family>_sum, <family>_count.
                for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
                    let family = String(name.dropLast(suffix.count))
                    if type[family] == "histogram" { name = family }
                }
                XCTAssertTrue(name.hasPrefix("httpcache_"), name, file: file, line: line)
                XCTAssertTrue(help.contains(name), "HELP before \(name)", file: file, line: line)
                XCTAssertNotNil(type[name], "TYPE before \(name)", file: file, line: line)
                let series = String(current[..<current.lastIndex(of: " ")!])
                samples[series] = String(current[Range(match.range(at: 3), in: current)!])
            }
        }
        XCTAssertEqual(help, Set(type.keys), "every family has HELP and TYPE", file: file, line: line)
        for (name, kind) in type {
            XCTAssertTrue(name.hasPrefix("httpcache_"), name, file: file, line: line)
            XCTAssertEqual(kind == "counter", name.hasSuffix("_total"), "\(name) is a \(kind)", file: file, line: line)
        }
        return samples
    }

    func testPrometheusFormat() {
        let text = sample().prometheus()
        let samples = parsePrometheus(text)
        XCTAssertEqual(samples[#"httpcache_requests_total{status="200"}"#], "2")
        XCTAssertEqual(samples[#"httpcache_requests_total{status="404"}"#], "1")
        XCTAssertEqual(samples[#"httpcache_cache_requests_total{cache="HIT"}"#], "2")
        XCTAssertEqual(samples[#"httpcache_cache_requests_total{cache="PARTIAL"}"#], "1")
        XCTAssertEqual(samples[#"httpcache_cache_status_requests_total{status="hit"}"#], "2")
        XCTAssertEqual(samples[#"httpcache_cache_status_requests_total{status="uri-miss"}"#], "1")
        XCTAssertEqual(samples[#"httpcache_cache_status_requests_total{status="stale"}"#], "0")
        XCTAssertEqual(samples[#"httpcache_origin_errors_total{code="timeout"}"#], "2")
        XCTAssertEqual(samples[#"httpcache_origin_errors_total{code="status_5xx"}"#], "1")
        XCTAssertEqual(samples["httpcache_cache_bytes_served_total"], "1000")
        XCTAssertEqual(samples["httpcache_origin_bytes_fetched_total"], "3000")
        XCTAssertEqual(samples["httpcache_origin_requests_total"], "2")
        XCTAssertEqual(samples["httpcache_open_connections"], "1")
        XCTAssertEqual(samples["httpcache_active_downloads"], "1")
        XCTAssertEqual(samples["httpcache_evictions_total"], "3")
        XCTAssertEqual(samples["httpcache_cache_size_bytes"], "123456")
        XCTAssertEqual(samples["httpcache_cache_entries"], "7")
        XCTAssertEqual(samples["httpcache_uptime_seconds"], "12.500")
        XCTAssertEqual(samples["httpcache_access_log_dropped_total"], "2")
        // Empty families still say they exist.
        let empty = MetricsSnapshot().prometheus()
        _ = parsePrometheus(empty)
        XCTAssertTrue(empty.contains("# TYPE httpcache_origin_errors_total counter\n"))
    }

    func testPrometheusEscapesLabelValues() {
        var text = PrometheusText()
        text.family("httpcache_x_total", .counter, "X.", [(["code": "a\"b\\c\nd"], "4")])
        XCTAssertTrue(text.output.contains(#"httpcache_x_total{code="a\"b\\c\nd"} 4"# + "\n"), text.output)
        _ = parsePrometheus(text.output)
        XCTAssertEqual(PrometheusText.escapeHelp("a\\b\nc\""), "a\\\\b\\nc\"")
    }

    // MARK: Stats routes

    func testStatsRoutes() throws {
        let snapshot = sample()
        let stats = try XCTUnwrap(StatsRoutes.response(target: "/stats", peerIsLoopback: true, snapshot: snapshot))
        XCTAssertEqual(stats.status, 200)
        XCTAssertEqual(stats.contentType, "application/json")
        XCTAssertEqual(stats.body, snapshot.json() + "\n")
        let metrics = try XCTUnwrap(StatsRoutes.response(target: "/metrics?x=1", peerIsLoopback: true, snapshot: snapshot))
        XCTAssertEqual(metrics.status, 200)
        XCTAssertEqual(metrics.contentType, "text/plain; version=0.0.4; charset=utf-8")
        XCTAssertEqual(metrics.body, snapshot.prometheus())
        let denied = try XCTUnwrap(StatsRoutes.response(target: "/metrics", peerIsLoopback: false, snapshot: snapshot))
        XCTAssertEqual(denied.status, 403)
        XCTAssertNil(StatsRoutes.response(target: "/statsx", peerIsLoopback: true, snapshot: snapshot))
        XCTAssertNil(StatsRoutes.response(target: "/p/abc/stats", peerIsLoopback: true, snapshot: snapshot))
        var taken = false
        func probe() -> MetricsSnapshot { taken = true; return snapshot }
        _ = StatsRoutes.response(target: "/stats", peerIsLoopback: false, snapshot: probe())
        XCTAssertFalse(taken, "no snapshot for a refused peer")
    }

    private func address(_ text: String) -> SocketAddress {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            if text.contains(":") {
                var v6 = sockaddr_in6()
                v6.sin6_family = sa_family_t(AF_INET6)
                XCTAssertEqual(inet_pton(AF_INET6, text, &v6.sin6_addr), 1, text)
                raw.storeBytes(of: v6, as: sockaddr_in6.self)
            } else {
                var v4 = sockaddr_in()
                v4.sin_family = sa_family_t(AF_INET)
                XCTAssertEqual(inet_pton(AF_INET, text, &v4.sin_addr), 1, text)
                raw.storeBytes(of: v4, as: sockaddr_in.self)
            }
        }
        return SocketAddress(storage: storage)
    }

    func testLoopbackPeers() {
        let table: [(String, Bool)] = [
            ("127.0.0.1", true), ("127.255.0.9", true), ("128.0.0.1", false), ("10.0.0.1", false),
            ("0.0.0.0", false), ("192.168.1.127", false),
            ("::1", true), ("::", false), ("::2", false), ("fe80::1", false),
            ("::ffff:127.0.0.1", true), ("::ffff:127.1.2.3", true), ("::ffff:10.0.0.1", false),
            ("::127.0.0.1", false),
        ]
        for (text, loopback) in table {
            XCTAssertEqual(address(text).isLoopback, loopback, text)
        }
        XCTAssertFalse(SocketAddress(storage: sockaddr_storage()).isLoopback, "unspecified family")
    }

    // MARK: CMCD

    /// Players' CMCD: rebuffers, the buffer-length histogram, players seen,
    /// per content, malformed payloads; merged over loops with the bounds kept.
    func testCMCDFiguresInStatsAndMetrics() throws {
        var loop1 = ProxyMetrics()
        loop1.cmcd.record(CMCD.parse(payload: "bl=1500,bs,sid=\"a\",cid=\"movie\",ot=v,mtp=4000,br=800"))
        loop1.cmcd.record(CMCD.parse(payload: "bl=70000,sid=\"b\",cid=\"movie\",ot=a"))
        loop1.cmcd.hint(.queued)
        var loop2 = ProxyMetrics()
        loop2.cmcd.record(CMCD.parse(payload: "bl=400,sid=\"a\",zz=1"))
        loop1.add(loop2)
        let snapshot = MetricsSnapshot(proxy: loop1, engine: EngineCounters(),
                                       openConnections: 0, cacheSizeBytes: 0, cacheEntries: 0,
                                       uptimeSeconds: 1, hintsFetched: 1)
        let samples = parsePrometheus(snapshot.prometheus())
        XCTAssertEqual(samples["httpcache_cmcd_requests_total"], "3")
        XCTAssertEqual(samples["httpcache_cmcd_rebuffers_total"], "1")
        XCTAssertEqual(samples["httpcache_cmcd_malformed_total"], "1")
        XCTAssertEqual(samples["httpcache_cmcd_players"], "2")
        XCTAssertEqual(samples[#"httpcache_cmcd_buffer_length_seconds_bucket{le="0.5"}"#], "1")
        XCTAssertEqual(samples[#"httpcache_cmcd_buffer_length_seconds_bucket{le="2.0"}"#], "2")
        XCTAssertEqual(samples[#"httpcache_cmcd_buffer_length_seconds_bucket{le="60.0"}"#], "2")
        XCTAssertEqual(samples[#"httpcache_cmcd_buffer_length_seconds_bucket{le="+Inf"}"#], "3")
        XCTAssertEqual(samples["httpcache_cmcd_buffer_length_seconds_count"], "3")
        XCTAssertEqual(samples["httpcache_cmcd_buffer_length_seconds_sum"], "71.900")
        XCTAssertEqual(samples[#"httpcache_cmcd_content_requests_total{cid="movie"}"#], "2")
        XCTAssertEqual(samples[#"httpcache_cmcd_content_rebuffers_total{cid="movie"}"#], "1")
        XCTAssertEqual(samples[#"httpcache_cmcd_object_requests_total{type="v"}"#], "1")
        XCTAssertEqual(samples[#"httpcache_cmcd_hints_total{outcome="queued"}"#], "1")
        XCTAssertEqual(samples[#"httpcache_cmcd_hint_fetches_total{result="fetched"}"#], "1")
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(snapshot.json().utf8)) as? [String: Any])
        let cmcd = try XCTUnwrap(object["cmcd"] as? [String: Any])
        XCTAssertEqual(cmcd["rebuffers"] as? Int, 1)
        XCTAssertEqual(cmcd["players"] as? Int, 2)
        XCTAssertEqual((cmcd["by_content"] as? [String: [String: Int]])?["movie"], ["requests": 2, "rebuffers": 1])
    }

    /// Players choose session and content ids: only so many are remembered.
    func testCMCDIdentifiersAreBounded() {
        var metrics = CMCDMetrics()
        for n in 0..<(CMCDMetrics.maxSessions + 5) {
            metrics.record(CMCD.parse(payload: "sid=\"s\(n)\",cid=\"c\(n)\""))
        }
        XCTAssertEqual(metrics.sessions.count, CMCDMetrics.maxSessions)
        XCTAssertTrue(metrics.sessionsOverflow)
        XCTAssertEqual(metrics.contents.count, CMCDMetrics.maxContents + 1)
        XCTAssertEqual(metrics.contents[CMCDMetrics.otherContent]?.requests, UInt64(CMCDMetrics.maxSessions + 5 - CMCDMetrics.maxContents))
    }
}
