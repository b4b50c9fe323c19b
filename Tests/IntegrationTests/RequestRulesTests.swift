import Foundation
import HTTPCache
import XCTest

/// What requests do to the shared cache of the forward and reverse modes
/// (issue 32): unsafe methods invalidate (RFC 9111 §4.4), only-if-cached
/// never reaches the origin (§5.2.1.7), a 304 updates the stored fields
/// (§4.3.4), client validators compare as RFC 9110 §13.1.2 says. nginx is
/// the origin and its access log the judge; the scripted origin only for a
/// 304 nginx cannot send (new Content-Type and ETag).
final class RequestRulesTests: TransparentCacheCase {
    static let locations = """
        location /unsafe/ {
            default_type text/plain;
            add_header Cache-Control "max-age=600" always;
            if ($request_method !~ ^(GET|HEAD)$) { return 204; }
        }
        location /plain/ { default_type text/plain; add_header Cache-Control "max-age=600"; }
"""

    override func setUpWithError() throws {
        try startOrigin(prefix: "httpcache-request-rules", files: ["unsafe/a.txt": "unsafe target\n", "plain/p.txt": "plain\n"],
                        locations: Self.locations)
    }

    private func start(_ mode: Mode, base: String? = nil) throws -> (RawHTTPConnection, (String) -> String) {
        origin.clearAccessLog()
        return try proxies.start(mode, base: base ?? origin.baseURL)
    }

    // MARK: invalidation (RFC 9111 §4.4)

    func testPutPatchDeleteAndPostInvalidateTheirTarget() throws {
        for mode in Mode.allCases {
            let (client, target) = try start(mode)
            for method in ["PUT", "PATCH", "DELETE", "POST"] {
                _ = try client.request(path: target("/unsafe/a.txt"))
                let hit = try client.request(path: target("/unsafe/a.txt"))
                XCTAssertTrue(hit.header("Cache-Status")?.hasPrefix("httpcache; hit") ?? false, "\(mode) \(method)")
                let body: [UInt8]? = method == "DELETE" ? nil : Array("payload".utf8)
                let unsafe = try client.request(method: method, path: target("/unsafe/a.txt"), body: body)
                XCTAssertEqual(unsafe.status, 204, "\(mode) \(method)")
                XCTAssertEqual(unsafe.header("Cache-Status"), "httpcache; fwd=method; fwd-status=204", "\(mode) \(method)")
                let after = try client.request(path: target("/unsafe/a.txt"))
                XCTAssertEqual(after.bodyString, "unsafe target\n", "\(mode) \(method)")
                XCTAssertTrue(after.header("Cache-Status")?.hasPrefix("httpcache; fwd=stale; fwd-status=304") ?? false,
                              "\(mode) \(method): \(after.header("Cache-Status") ?? "none")")
            }
            let log = origin.accessLog(waitingFor: 9).filter { $0.uri == "/unsafe/a.txt" }
            XCTAssertEqual(log.map(\.method), ["GET", "PUT", "GET", "PATCH", "GET", "DELETE", "GET", "POST", "GET"],
                           "\(mode): each unsafe method reached the origin, each next GET revalidated")
        }
    }

    // MARK: heuristic freshness (RFC 9111 §4.2.2)

    func testWithoutExplicitFreshnessOrLastModifiedEveryReuseAsksTheOrigin() throws {
        let faulty = try FaultyOrigin()
        let base = String(faulty.url("/").dropLast())
        let published = "Mon, 01 Jan 2024 00:00:00 GMT"
        for mode in Mode.allCases {
            let (client, target) = try start(mode, base: base)
            let bare = "/\(mode.rawValue)/bare", dated = "/\(mode.rawValue)/dated"
            faulty.serve(bare, body: Array("no freshness, no validator\n".utf8), fault: .status(200, fields: [:]))
            faulty.serve(dated, body: Array("published long ago\n".utf8),
                         fault: .status(200, fields: ["Last-Modified": published]))
            for _ in 0..<3 {
                XCTAssertEqual(try client.request(path: target(bare)).bodyString, "no freshness, no validator\n")
                XCTAssertEqual(try client.request(path: target(dated)).bodyString, "published long ago\n")
            }
            XCTAssertEqual(faulty.requests(for: bare).count, 3, "\(mode): never reused without the origin")
            XCTAssertEqual(faulty.requests(for: dated).count, 1, "\(mode): 10% of its age (capped at a day) is fresh")
        }
        // Proxy URLs keep the media policy: a few minutes even without Last-Modified.
        _ = try start(.forward, base: base)
        faulty.serve("/media/bare", body: Array("media".utf8), fault: .status(200, fields: [:]))
        let url = try XCTUnwrap(proxies.server).proxyURL(for: faulty.url("/media/bare"))
        for _ in 0..<3 { XCTAssertEqual(try RawHTTPClient.get(url: url, timeout: 30).bodyString, "media") }
        XCTAssertEqual(faulty.requests(for: "/media/bare").count, 1)
    }

    // MARK: only-if-cached (RFC 9111 §5.2.1.7)

    func testOnlyIfCachedWithNothingStoredIs504WithoutTheOrigin() throws {
        for mode in Mode.allCases {
            let (client, target) = try start(mode)
            for method in ["GET", "HEAD"] {
                let response = try client.request(method: method, path: target("/plain/p.txt"),
                                                  headers: [("Cache-Control", "only-if-cached")])
                XCTAssertEqual(response.status, 504, "\(mode) \(method)")
            }
            // Stored, it is answered from the cache.
            XCTAssertEqual(try client.request(path: target("/plain/p.txt")).bodyString, "plain\n")
            let cached = try client.request(path: target("/plain/p.txt"), headers: [("Cache-Control", "only-if-cached")])
            XCTAssertEqual(cached.status, 200, "\(mode)")
            XCTAssertEqual(cached.bodyString, "plain\n", "\(mode)")
            XCTAssertEqual(origin.accessLog(waitingFor: 1).filter { $0.uri == "/plain/p.txt" }.count, 1,
                           "\(mode): only the plain GET reached the origin")
        }
    }

    // MARK: 304 updates (RFC 9111 §4.3.4)

    func testA304UpdatesContentTypeETagAndTheNextValidation() throws {
        let faulty = try FaultyOrigin()
        let base = String(faulty.url("/").dropLast())
        for mode in Mode.allCases {
            let (client, target) = try start(mode, base: base)
            let path = "/\(mode.rawValue)/typed"
            let body = Array("a,b\n1,2\n".utf8)
            faulty.serve(path, body: body, fault: .status(200, fields: [
                "Content-Type": "text/plain", "ETag": "\"v1\"", "Cache-Control": "max-age=0"]))
            XCTAssertEqual(try client.request(path: target(path)).header("Content-Type"), "text/plain", "\(mode)")
            faulty.setFault(path, .status(304, fields: [
                "Content-Type": "text/csv", "ETag": "\"v2\"", "Cache-Control": "max-age=0", "Content-Length": "99"]))
            let updated = try client.request(path: target(path))
            XCTAssertEqual(updated.status, 200, "\(mode)")
            XCTAssertEqual(updated.body, body, "\(mode): the stored bytes, not the 304's Content-Length")
            XCTAssertEqual(updated.header("Content-Type"), "text/csv", "\(mode)")
            XCTAssertEqual(updated.header("ETag"), "\"v2\"", "\(mode)")
            // Client validators meet the updated ETag (weak comparison, RFC 9110 §13.1.2).
            for tag in ["\"v2\"", "W/\"v2\"", "\"v1\", W/\"v2\""] {
                let conditional = try client.request(path: target(path), headers: [("If-None-Match", tag),
                                                                                   ("Cache-Control", "max-stale")])
                XCTAssertEqual(conditional.status, 304, "\(mode) If-None-Match: \(tag)")
            }
            let old = try client.request(path: target(path), headers: [("If-None-Match", "\"v1\""),
                                                                       ("Cache-Control", "max-stale")])
            XCTAssertEqual(old.status, 200, "\(mode): the old ETag no longer matches")
            _ = try client.request(path: target(path))
            let validations = faulty.requests(for: path).dropFirst()
            XCTAssertEqual(validations.map { $0.header("If-None-Match") }, ["\"v1\"", "\"v2\""],
                           "\(mode): the next validation sends the updated ETag")
        }
    }
}
