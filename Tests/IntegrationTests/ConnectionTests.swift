import Foundation
import HTTPCache
import XCTest

/// The upstream client's connections: keep-alive reuse, dead connections, IPv6.
final class ConnectionTests: XCTestCase {
    func testKeepAliveReuseIsVisibleAtTheOrigin() throws {
        let fixture = try ProxyFixture()
        defer { fixture.stop() }
        let file = try fixture.file("reuse.bin", size: 1_000_000, seed: 51)
        for index in 0..<20 {
            let a = index * 50_000
            let response = try fixture.get("reuse.bin", range: "bytes=\(a)-\(a + 999)")
            XCTAssertBytes(response.body, equal: file, range: a..<(a + 1000))
        }
        let log = fixture.origin.accessLog(waitingFor: 20)
        XCTAssertEqual(log.count, 20)
        XCTAssertEqual(Set(log.map(\.connection)).count, 1, "one kept-alive connection: \(log.map(\.connection))")
    }

    func testReusedConnectionThatDiedIsRetriedOnceOnAFreshOne() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        let body = TestFile.randomBytes(count: 100_000, seed: 52)
        origin.serve("/drop.bin", body: body, fault: .dropReusedRequests)
        let proxy = try TestProxy()
        for (a, b) in [(0, 999), (50_000, 50_999), (90_000, 99_999)] {
            let response = try proxy.get(origin.url("/drop.bin"), range: "bytes=\(a)-\(b)")
            XCTAssertEqual(response.status, 206, response.bodyString)
            XCTAssertTrue(response.body[...] == body[a...b])
        }
        // Each reuse met a dead connection and was sent again on a new one.
        let requests = origin.requests(for: "/drop.bin")
        XCTAssertEqual(requests.map(\.range), ["bytes=0-999", "bytes=50000-50999", "bytes=50000-50999",
                                               "bytes=90000-", "bytes=90000-"])
        XCTAssertEqual(Set(requests.map(\.connection)).count, 3)
        XCTAssertEqual(proxy.logs.lines(.debug, containing: "retrying").count, 2, "\(proxy.logs.messages)")
    }

    func testOriginClosingIdleConnectionsIsHarmless() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        let body = TestFile.randomBytes(count: 50_000, seed: 53)
        origin.serve("/once.bin", body: body, fault: .closeAfterResponse)
        let proxy = try TestProxy()
        for (a, b) in [(0, 9), (10_000, 19_999), (40_000, 49_999)] {
            let response = try proxy.get(origin.url("/once.bin"), range: "bytes=\(a)-\(b)")
            XCTAssertEqual(response.status, 206, response.bodyString)
            XCTAssertTrue(response.body[...] == body[a...b])
        }
        XCTAssertEqual(origin.connectionsAccepted, 3)
    }

    func testIdleConnectionsPerOriginAreCapped() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        let body = TestFile.randomBytes(count: 1000, seed: 56)
        for index in 0..<10 { origin.serve("/slow\(index)", body: body, fault: .delayed(0.3)) }
        let proxy = try TestProxy()
        // Ten requests at once need ten connections; afterwards at most 8 stay idle.
        let urls = try (0..<10).map { try proxy.url(for: origin.url("/slow\($0)")) }
        // Threads of our own: concurrentPerform runs only as many at once as there are cores.
        let results = ResultsBox(count: 10)
        let done = DispatchSemaphore(value: 0)
        for index in 0..<10 {
            Thread.detachNewThread {
                results.set(index, Result { try RawHTTPClient.get(url: urls[index]) })
                done.signal()
            }
        }
        for _ in 0..<10 { done.wait() }
        for result in results.values { XCTAssertEqual(try result?.get().body, body) }
        XCTAssertEqual(origin.connectionsAccepted, 10)
        XCTAssertTrue(TestTools.waitUntil(timeout: 3) { origin.openConnections == 8 }, "open: \(origin.openConnections)")
    }

    func testIPv6LiteralOriginOverHTTPAndHTTPS() throws {
        let certificates = try TestCertificates()
        let directory = try TemporaryDirectory(prefix: "httpcache-ipv6")
        let file = try TestFile.random(size: 1_500_000, seed: 54, in: directory.url, name: "v6.bin")
        let plainPort = try TestTools.freePort()
        let plain = try NginxOrigin(root: directory.url, port: plainPort, extraServerConfig: "listen [::1]:\(plainPort);")
        defer { plain.stop() }
        let tlsPort = try TestTools.freePort()
        let secure = try NginxOrigin(root: directory.url, tls: certificates.good, port: tlsPort,
                                     extraServerConfig: "listen [::1]:\(tlsPort) ssl;")
        defer { secure.stop() }
        let proxy = try TestProxy { $0.caFile = certificates.caFile }

        for base in ["http://[::1]:\(plainPort)", "https://[::1]:\(tlsPort)"] {
            let whole = try proxy.get(base + "/v6.bin")
            XCTAssertEqual(whole.status, 200, "\(base): \(whole.bodyString)")
            XCTAssertBytes(whole.body, equal: file, base)
        }
        // One request each: the [::1] URL reached the IPv6 listeners.
        XCTAssertEqual(plain.accessLog(waitingFor: 1).count, 1)
        XCTAssertEqual(secure.accessLog(waitingFor: 1).count, 1)
    }

    func testExtraAndForwardedHeaders() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        let body = TestFile.randomBytes(count: 10_000, seed: 55)
        origin.serve("/h.bin", body: body)
        let proxy = try TestProxy {
            $0.extraHeaders = [("X-Token", "abc"), ("User-Agent", "Operator/1")]
            $0.forwardedHeaders = ["X-Client-Id"]
        }
        _ = try proxy.get(origin.url("/h.bin"), range: "bytes=0-99")
        let response = try proxy.get(origin.url("/h.bin"), range: "bytes=50-199", headers: [
            ("User-Agent", "Player/2"), ("Accept", "video/*"), ("Accept-Language", "fr"), ("X-Client-Id", "42"),
            ("Cookie", "session=1"), ("X-Other", "no"), ("Accept-Encoding", "gzip"), ("Connection", "keep-alive"),
        ])
        XCTAssertTrue(response.body[...] == body[50..<200])
        let request = try XCTUnwrap(origin.requests(for: "/h.bin").last)
        XCTAssertEqual(request.header("X-Token"), "abc")
        XCTAssertEqual(request.header("User-Agent"), "Operator/1", "configured fields win")
        XCTAssertEqual(request.header("Accept"), "video/*")
        XCTAssertEqual(request.header("Accept-Language"), "fr")
        XCTAssertEqual(request.header("X-Client-Id"), "42")
        XCTAssertNil(request.header("Cookie"))
        XCTAssertNil(request.header("X-Other"))
        // Range, Accept-Encoding and Connection are the proxy's own.
        XCTAssertEqual(request.range, "bytes=100-199")
        XCTAssertEqual(request.header("Accept-Encoding"), "identity")
        XCTAssertEqual(request.header("Connection"), "keep-alive")
        XCTAssertEqual(request.headers.filter { $0.0.lowercased() == "user-agent" }.count, 1)
    }

    func testCredentialsStayWithTheOriginFirstAsked() throws {
        let first = try FaultyOrigin()
        let second = try FaultyOrigin()
        defer {
            first.stop()
            second.stop()
        }
        second.serve("/file", body: [1, 2, 3])
        first.serve("/file", fault: .redirect(status: 302, location: second.url("/file")))
        let proxy = try TestProxy {
            $0.extraHeaders = [("Authorization", "Bearer secret"), ("X-Token", "abc")]
        }
        XCTAssertEqual(try proxy.get(first.url("/file")).body, [1, 2, 3])
        XCTAssertEqual(first.requests.first?.header("Authorization"), "Bearer secret")
        XCTAssertNil(second.requests.first?.header("Authorization"))
        XCTAssertEqual(second.requests.first?.header("X-Token"), "abc")
    }

    func testReservedOrMalformedHeaderConfigurationFailsTheStart() throws {
        let cases: [(String, (inout HTTPCacheConfiguration) -> Void)] = [
            ("set by the proxy", { $0.extraHeaders = [("Range", "bytes=0-")] }),
            ("set by the proxy", { $0.forwardedHeaders = ["Connection"] }),
            ("not a valid header name", { $0.extraHeaders = [("Bad Name", "x")] }),
            ("line break", { $0.extraHeaders = [("X-A", "a\r\nX-B: b")] }),
        ]
        for (expected, configure) in cases {
            XCTAssertThrowsError(try TestProxy(configure)) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(error)")
            }
        }
    }
}
