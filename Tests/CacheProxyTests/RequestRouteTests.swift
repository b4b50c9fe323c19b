import CacheHTTP
import XCTest
@testable import CacheProxy

final class RequestRouteTests: XCTestCase {
    private let me = "httpcache-0000abcd"

    private func head(_ target: String, _ fields: [(String, String)] = [("Host", "a")], method: String = "GET",
                      version: HTTPVersion = .http11) -> HTTPRequestHead {
        HTTPRequestHead(method: method, target: target, version: version, headers: HTTPHeaders(fields))
    }

    func testRoutes() throws {
        let origin = try XCTUnwrap(OriginURL.parse("https://media.example.com"))
        typealias Row = (HTTPRequestHead, OriginURL?, Bool, RequestRoute, UInt)
        let rows: [Row] = [
            (head("/p/abc/x.mp4"), nil, true, .local, #line),
            (head("/ping"), nil, false, .local, #line),
            (head("/ping", []), nil, true, .refuse(status: 400, reason: "Bad request: no Host field"), #line),
            (head("/ping", [], version: .http10), nil, true, .local, #line),               // 1.0 may omit Host
            (head("/ping", [("Host", "a"), ("Host", "b")]), nil, true,
             .refuse(status: 400, reason: "Bad request: more than one Host field"), #line),
            (head("/ping", [("Host", "a b")]), nil, true,
             .refuse(status: 400, reason: "Bad request: Host is not a valid authority"), #line),
            (head("/x", [("Host", "a"), ("Via", "1.1 other, 1.1 \(me)")]), nil, true,
             .refuse(status: 508, reason: "Loop detected: the request already passed through this proxy"), #line),
            (head("/x", [("Host", "a"), ("Via", "1.1 other")]), nil, true, .local, #line),
            (head("h:443", [("Host", "h:443")], method: "CONNECT"), nil, true, .tunnel(host: "h", port: 443), #line),
            (head("[::1]:8443", [("Host", "[::1]:8443")], method: "CONNECT"), origin, true,
             .tunnel(host: "::1", port: 8443), #line),
            (head("h:443", [("Host", "h:443")], method: "CONNECT"), nil, false,
             .refuse(status: 403, reason: "Forbidden: tunnels (CONNECT) are for loopback clients only"), #line),
            (head("h", [("Host", "h")], method: "CONNECT"), nil, true,
             .refuse(status: 400, reason: "Bad request: CONNECT needs host:port as its target"), #line),
            (head("h:443", [("Host", "h:443"), ("Content-Length", "5")], method: "CONNECT"), nil, true,
             .refuse(status: 400, reason: "Bad request: CONNECT takes no content"), #line),
            (head("h:443/x", [("Host", "h")], method: "CONNECT"), nil, true,
             .refuse(status: 400, reason: "Bad request: CONNECT needs host:port as its target"), #line),
            (head("http://o:8080/a?b"), nil, true, .transparent(OriginURL.parse("http://o:8080/a?b")!), #line),
            (head("http://o/a"), nil, false,
             .refuse(status: 403, reason: "Forbidden: forward-proxy use is for loopback clients only"), #line),
            (head("ftp://o/a"), nil, true,
             .refuse(status: 400, reason: "Bad request: the target is not an http or https URL"), #line),
            (head("/v/a.mp4?t=1"), origin, false,
             .transparent(OriginURL.parse("https://media.example.com/v/a.mp4?t=1")!), #line),
            (head("/admin/cache"), origin, true,
             .transparent(OriginURL.parse("https://media.example.com/admin/cache")!), #line),  // the origin's path
        ]
        for (request, reverse, loopback, expected, line) in rows {
            XCTAssertEqual(RequestRoute.resolve(request, pseudonym: me, reverseOrigin: reverse, peerIsLoopback: loopback),
                           expected, request.target, line: line)
        }
    }

    /// `/_httpcache/…` is the proxy's own in every mode, a reverse proxy's included.
    func testOwnRoutesUnderTheReservedPrefix() throws {
        let origin = try XCTUnwrap(OriginURL.parse("https://media.example.com"))
        XCTAssertEqual(OwnRoutes.unprefixed("/_httpcache/stats?x=1"), "/stats?x=1")
        XCTAssertEqual(OwnRoutes.unprefixed("/_httpcache/admin/cache"), "/admin/cache")
        XCTAssertNil(OwnRoutes.unprefixed("/_httpcachex/stats"))
        XCTAssertNil(OwnRoutes.unprefixed("/stats"))
        XCTAssertEqual(RequestRoute.resolve(head("/_httpcache/stats"), pseudonym: me, reverseOrigin: origin,
                                            peerIsLoopback: true, ownRoute: true), .local)
        XCTAssertEqual(RequestRoute.resolve(head("/stats"), pseudonym: me, reverseOrigin: origin, peerIsLoopback: true),
                       .transparent(OriginURL.parse("https://media.example.com/stats")!))
    }
}

/// The table of the proxy's own routes.
final class LocalRouteTests: XCTestCase {
    func testTheTable() {
        let proxyURL = "/p/aHR0cDovLzEyNy4wLjAuMTo4MC9h/a.mp4"
        let rows: [(String, String, Bool, LocalRoute, UInt)] = [
            ("GET", proxyURL, false, .proxyURL, #line),
            ("HEAD", proxyURL, false, .proxyURL, #line),
            ("GET", proxyURL, true, .refuse(status: 400, reason: "Bad request: GET and HEAD take no body\n", allow: nil), #line),
            ("POST", proxyURL, false, .refuse(status: 405, reason: "Method not allowed\n", allow: "GET, HEAD"), #line),
            ("GET", "/admin/cache", false, .admin, #line),
            ("POST", "/admin/cache/clear?x=1", false, .admin, #line),
            ("HEAD", "/admin/cache", false, .notFound, #line),
            ("DELETE", "/admin/cache", false, .refuse(status: 405, reason: "Method not allowed\n", allow: "GET, HEAD"), #line),
            ("GET", "/ping", false, .ping, #line),
            ("GET", "/ping?x", false, .ping, #line),
            ("GET", "/pingx", false, .notFound, #line),
            ("GET", "/livez", false, .health, #line),
            ("HEAD", "/readyz", false, .health, #line),
            ("GET", "/ui/", false, .page, #line),
            ("GET", "/ui", false, .page, #line),
            ("GET", "/stats", false, .stats, #line),
            ("GET", "/metrics?format=x", false, .stats, #line),
            ("GET", "/", false, .root, #line),
            ("GET", "/?a", false, .root, #line),
            ("GET", "/nothing", false, .notFound, #line),
        ]
        for (method, target, hasBody, route, line) in rows {
            XCTAssertEqual(LocalRoute.resolve(method: method, target: target, hasBody: hasBody), route, "\(method) \(target)",
                           line: line)
        }
        XCTAssertEqual([LocalRoute.admin, .page, .stats].filter(\.isHomeOnly).count, 3)
        XCTAssertFalse(LocalRoute.proxyURL.isHomeOnly || LocalRoute.ping.isHomeOnly || LocalRoute.health.isHomeOnly)
    }
}
