import Foundation
import XCTest

/// Redirects followed by the upstream client.
final class RedirectTests: XCTestCase {
    private var origin: FaultyOrigin!

    override func setUpWithError() throws {
        origin = try FaultyOrigin()
    }

    override func tearDown() {
        origin?.stop()
        origin = nil
    }

    /// http → http (absolute path) → https (303) → relative (308, 307, 302) → the file.
    func testRedirectChainFromHTTPToHTTPSWithRelativeLocationsEndsInTheRightBytes() throws {
        let certificates = try TestCertificates()
        let directory = try TemporaryDirectory(prefix: "httpcache-redirect")
        let root = directory.url.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("media"), withIntermediateDirectories: true)
        let file = try TestFile.random(size: 2_000_000, seed: 41, in: root.appendingPathComponent("media"), name: "clip.bin")
        let tlsOrigin = try NginxOrigin(root: root, tls: certificates.good, extraServerConfig: """
            absolute_redirect off;
            location = /dir/a { return 308 b; }
            location = /dir/b { return 307 ../other/c; }
            location = /other/c { return 302 /media/clip.bin; }
        """)
        defer { tlsOrigin.stop() }
        origin.serve("/start", fault: .redirect(status: 301, location: "/hop"))
        origin.serve("/hop", fault: .redirect(status: 303, location: tlsOrigin.url("/dir/a")))
        let proxy = try TestProxy { $0.caFile = certificates.caFile }

        let whole = try proxy.get(origin.url("/start"))
        XCTAssertEqual(whole.status, 200, whole.bodyString)
        XCTAssertBytes(whole.body, equal: file)
        XCTAssertEqual(origin.requests.map(\.path), ["/start", "/hop"])
        XCTAssertEqual(tlsOrigin.accessLog(waitingFor: 4).map { "\($0.status) \($0.uri)" },
                       ["308 /dir/a", "307 /dir/b", "302 /other/c", "206 /media/clip.bin"])
        // The cache entry is the URL the client asked for.
        XCTAssertTrue(proxy.waitForMetadata(line: "url \(origin.url("/start"))"), "\(proxy.metadata())")
        XCTAssertEqual(proxy.metadata().count, 1)

        // Ranges of a second resource behind the same chain: the first one
        // follows it, the rest go straight to the final location.
        let other = try TestFile.random(size: 1_000_000, seed: 45, in: root.appendingPathComponent("media"), name: "other.bin")
        origin.serve("/start2", fault: .redirect(status: 302, location: tlsOrigin.url("/media/other.bin")))
        var generator = SplitMix(seed: 9)
        for _ in 0..<20 {
            let a = Int(generator.next() % 1_000_000)
            let b = min(999_999, a + Int(generator.next() % 50_000))
            let response = try proxy.get(origin.url("/start2"), range: "bytes=\(a)-\(b)")
            XCTAssertEqual(response.status, 206)
            XCTAssertBytes(response.body, equal: other, range: a..<(b + 1))
        }
        XCTAssertEqual(origin.requests(for: "/start2").count, 1)
        // 20 or more: a range over cached bytes fetches each gap on its own.
        XCTAssertTrue(TestTools.waitUntil(timeout: 3) {
            tlsOrigin.accessLog().filter { $0.uri == "/media/other.bin" }.count >= 20
        })
    }

    func testLaterRequestsGoToTheFinalLocationDirectly() throws {
        let body = TestFile.randomBytes(count: 300_000, seed: 42)
        origin.serve("/movie", fault: .redirect(status: 302, location: "/cdn/movie.bin?token=1"))
        origin.serve("/cdn/movie.bin?token=1", body: body)
        let proxy = try TestProxy()

        let first = try proxy.get(origin.url("/movie"), range: "bytes=0-999")
        XCTAssertEqual(first.status, 206)
        XCTAssertTrue(first.body[...] == body[0..<1000])
        origin.clearLog()
        for (a, b) in [(100_000, 100_999), (200_000, 299_999), (5_000, 5_099)] {
            let response = try proxy.get(origin.url("/movie"), range: "bytes=\(a)-\(b)")
            XCTAssertEqual(response.status, 206)
            XCTAssertTrue(response.body[...] == body[a...b])
        }
        XCTAssertEqual(origin.requests.map(\.path), Array(repeating: "/cdn/movie.bin?token=1", count: 3))
    }

    func testRememberedLocationThatFailsFallsBackToTheURLAskedFor() throws {
        let body = TestFile.randomBytes(count: 100_000, seed: 43)
        origin.serve("/movie", fault: .redirect(status: 302, location: "/v1/movie.bin"))
        origin.serve("/v1/movie.bin", body: body)
        let proxy = try TestProxy()
        XCTAssertEqual(try proxy.get(origin.url("/movie"), range: "bytes=0-99").status, 206)

        // The signed location expired; the origin now sends clients elsewhere.
        origin.remove("/v1/movie.bin")
        origin.serve("/movie", fault: .redirect(status: 302, location: "/v2/movie.bin"))
        origin.serve("/v2/movie.bin", body: body)
        origin.clearLog()
        let response = try proxy.get(origin.url("/movie"), range: "bytes=50000-50999")
        XCTAssertEqual(response.status, 206, response.bodyString)
        XCTAssertTrue(response.body[...] == body[50_000..<51_000])
        XCTAssertEqual(origin.requests.map(\.path), ["/v1/movie.bin", "/movie", "/v2/movie.bin"])
    }

    func testRedirectLoopIs502() throws {
        origin.serve("/a", fault: .redirect(status: 302, location: "/b"))
        origin.serve("/b", fault: .redirect(status: 301, location: origin.url("/a")))
        let proxy = try TestProxy()
        let response = try proxy.get(origin.url("/a"))
        XCTAssertEqual(response.status, 502)
        XCTAssertTrue(response.bodyString.contains("redirect loop"), response.bodyString)
        XCTAssertFalse(proxy.logs.lines(.warning, containing: "redirect loop").isEmpty, "\(proxy.logs.messages)")
        XCTAssertEqual(origin.requests.count, 2)
    }

    func testTenRedirectsAreFollowedAndEleventhIs502() throws {
        let body = TestFile.randomBytes(count: 5_000, seed: 44)
        for hop in 0..<11 {
            origin.serve("/r\(hop)", fault: .redirect(status: 307, location: "/r\(hop + 1)"))
        }
        origin.serve("/r11", body: body)
        let proxy = try TestProxy()

        let ten = try proxy.get(origin.url("/r1"))
        XCTAssertEqual(ten.status, 200, ten.bodyString)
        XCTAssertTrue(ten.body == body)
        let eleven = try proxy.get(origin.url("/r0"))
        XCTAssertEqual(eleven.status, 502)
        XCTAssertTrue(eleven.bodyString.contains("more than 10 redirects"), eleven.bodyString)
    }

    func testRedirectWithoutUsableLocationIs502() throws {
        origin.serve("/ftp", fault: .redirect(status: 301, location: "ftp://example.com/file"))
        let proxy = try TestProxy()
        let response = try proxy.get(origin.url("/ftp"))
        XCTAssertEqual(response.status, 502)
        XCTAssertTrue(response.bodyString.contains("unusable Location"), response.bodyString)
    }
}
