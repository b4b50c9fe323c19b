import Foundation
import HTTPCache
import XCTest

/// Issue #27: `--allow-origin` restricts every fetch (forward targets,
/// redirect hops, signed playlist URIs), and reverse mode keeps the Host check.
final class DestinationTests: XCTestCase {
    /// An nginx origin holding a secret the proxy must never fetch, and an
    /// allowed scripted origin that redirects there.
    private final class Setup {
        let directory: TemporaryDirectory
        let secretOrigin: NginxOrigin
        let allowed: FaultyOrigin
        let secret = Array("internal secret\n".utf8)
        var secretURL: String { secretOrigin.url("/internal-secret") }

        init() throws {
            directory = try TemporaryDirectory(prefix: "httpcache-dest")
            let www = directory.file("www")
            try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
            try Data(secret).write(to: www.appendingPathComponent("internal-secret"))
            secretOrigin = try NginxOrigin(root: www)
            allowed = try FaultyOrigin()
        }

        func stop() {
            allowed.stop()
            secretOrigin.stop()
            directory.remove()
        }

        var secretRequests: Int { secretOrigin.accessLog().filter { $0.uri == "/internal-secret" }.count }
    }

    func testForwardTargetsAndRedirectHopsAreCheckedAgainstAllowedOrigins() throws {
        let setup = try Setup()
        defer { setup.stop() }
        let media = TestFile.randomBytes(count: 50_000, seed: 7)
        setup.allowed.serve("/media.bin", body: media)
        setup.allowed.serve("/hop.bin", fault: .redirect(status: 302, location: setup.secretURL))
        // A HOST:PORT entry: the allowed origin's port only, not the secret's on the same host.
        let proxy = try TestProxy { $0.allowedOrigins = ["127.0.0.1:\(setup.allowed.port)"] }
        let port = proxy.server.servingPort

        let ok = try proxy.get(setup.allowed.url("/media.bin"))
        XCTAssertEqual(ok.status, 200)
        XCTAssertEqual(ok.body, media, "an allowed origin is served byte-exact")
        XCTAssertEqual(try proxy.get(setup.secretURL).status, 403, "a proxy URL of another port of the same host")

        let redirected = try proxy.get(setup.allowed.url("/hop.bin"))
        XCTAssertEqual(redirected.status, 403, "a redirect hop to a destination outside the list")
        XCTAssertFalse(redirected.body.starts(with: setup.secret))

        // Forward mode: an absolute-form target.
        let forward = try RawHTTPConnection(port: port)
        try forward.sendRequest(path: setup.secretURL, headers: [("Host", "127.0.0.1:\(setup.secretOrigin.port)")])
        let answer = try forward.readResponse()
        XCTAssertEqual(answer.status, 403, "forward-proxy targets are checked too")
        XCTAssertFalse(answer.body.starts(with: setup.secret))
        // Forward mode with a body (passed through): refused before it is read, nothing sent on.
        let post = try RawHTTPConnection(port: port)
        try post.sendRequest(method: "POST", path: setup.secretURL,
                             headers: [("Host", "127.0.0.1:\(setup.secretOrigin.port)"), ("Expect", "100-continue"),
                                       ("Content-Length", "5")])
        XCTAssertEqual(try post.readResponse().status, 403, "no 100 Continue before the check")

        let forwardAllowed = try RawHTTPConnection(port: port).get(setup.allowed.url("/media.bin"))
        XCTAssertEqual(forwardAllowed.status, 200)
        XCTAssertEqual(forwardAllowed.body, media)
        XCTAssertEqual(setup.secretRequests, 0, "the secret's origin never saw a request")
    }

    func testLANModeSignsOnlyPlaylistURIsThePolicyAllows() throws {
        let setup = try Setup()
        defer { setup.stop() }
        let segment = TestFile.randomBytes(count: 30_000, seed: 9)
        setup.allowed.serve("/seg.ts", body: segment)
        let playlist = """
            #EXTM3U
            #EXT-X-TARGETDURATION:4
            #EXTINF:4,
            \(setup.allowed.url("/seg.ts"))
            #EXTINF:4,
            \(setup.secretURL)
            #EXT-X-ENDLIST

            """
        setup.allowed.serve("/list.m3u8", body: Array(playlist.utf8))
        let proxy = try TestProxy {
            $0.host = "0.0.0.0"
            $0.allowedOrigins = ["127.0.0.1:\(setup.allowed.port)"]
        }
        let port = proxy.server.servingPort
        let signed = try RawHTTPClient.parse(url: try proxy.url(for: setup.allowed.url("/list.m3u8"))).path
        let listed = try RawHTTPConnection(port: port).get(signed)
        XCTAssertEqual(listed.status, 200)
        let lines = String(decoding: listed.body, as: UTF8.self).split(separator: "\n").map(String.init)
        let uris = lines.filter { !$0.hasPrefix("#") }
        XCTAssertEqual(uris.count, 2, "\(lines)")
        XCTAssertEqual(uris.last, setup.secretURL, "a destination outside the policy is not signed (left as written)")
        let segmentURL = try XCTUnwrap(uris.first)
        XCTAssertTrue(segmentURL.contains("/p/"), segmentURL)
        let fetched = try RawHTTPConnection(port: port).get(try RawHTTPClient.parse(url: segmentURL).path)
        XCTAssertEqual(fetched.status, 200, "an allowed URI is signed, so LAN clients can fetch it")
        XCTAssertEqual(fetched.body, segment)
        // Without an allow-list, only the playlist's own origin is signed.
        let open = try TestProxy { $0.host = "0.0.0.0" }
        let openSigned = try RawHTTPClient.parse(url: try open.url(for: setup.allowed.url("/list.m3u8"))).path
        let openList = try RawHTTPConnection(port: open.server.servingPort).get(openSigned)
        let openURIs = String(decoding: openList.body, as: UTF8.self).split(separator: "\n").filter { !$0.hasPrefix("#") }
        XCTAssertEqual(openURIs.last.map(String.init), setup.secretURL, "another origin's URI is not signed")
        XCTAssertEqual(try RawHTTPConnection(port: open.server.servingPort)
            .get(try RawHTTPClient.parse(url: String(try XCTUnwrap(openURIs.first))).path).body, segment)
        // The player's segment makes prefetching look at what follows: the
        // other origin's URI, which no LAN client can ask for, is not fetched.
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) {
            !open.logs.lines(.debug, containing: "prefetch skipped: another origin").isEmpty
        }, "\(open.logs.messages)")
        XCTAssertEqual(setup.secretRequests, 0)
    }

    func testReverseModeChecksHostAndLANReverseNeedsAnOptIn() throws {
        let setup = try Setup()
        defer { setup.stop() }
        let proxy = try TestProxy {
            $0.origin = setup.secretOrigin.baseURL
            $0.extraHeaders = [("Authorization", "Bearer T")]
            $0.serverNames = ["media.example"]
        }
        let port = proxy.server.servingPort
        func get(_ host: String) throws -> RawResponse {
            try RawHTTPConnection(port: port).get("/internal-secret", headers: [("Host", host)])
        }
        let foreign = try get("attacker.example")
        XCTAssertEqual(foreign.status, 421, "a rebound name never reaches the origin with the operator's token")
        XCTAssertFalse(foreign.body.starts(with: setup.secret))
        XCTAssertEqual(try get("attacker.example:\(port)").status, 421)
        XCTAssertEqual(setup.secretRequests, 0)
        XCTAssertEqual(try get("localhost:\(port)").body, setup.secret, "a loopback name is served")
        XCTAssertEqual(try get("media.example").body, setup.secret, "a configured server name is served")
        XCTAssertEqual(try get("MEDIA.example:443").status, 200)

        // LAN mode: reverse proxying only with the opt-in.
        do {
            _ = try TestProxy {
                $0.host = "0.0.0.0"
                $0.origin = setup.secretOrigin.baseURL
            }
            XCTFail("a LAN reverse proxy started without the opt-in")
        } catch let error as HTTPCacheError {
            XCTAssertEqual(error.code, .invalidArgument)
            XCTAssertTrue(error.message.contains("--allow-lan-reverse-proxy"), error.message)
        }
        let lan = try TestProxy {
            $0.host = "0.0.0.0"
            $0.origin = setup.secretOrigin.baseURL
            $0.allowsLANReverseProxy = true
        }
        let lanPort = lan.server.servingPort
        XCTAssertEqual(try RawHTTPConnection(port: lanPort).get("/internal-secret").status, 200, "address literal Host")
        XCTAssertEqual(try RawHTTPConnection(port: lanPort).get("/internal-secret",
                                                                headers: [("Host", "attacker.example")]).status, 421)
    }

    func testLANStatsFromLoopbackCheckHost() throws {
        let proxy = try TestProxy { $0.host = "0.0.0.0" }
        let port = proxy.server.servingPort
        XCTAssertEqual(try RawHTTPConnection(port: port).get("/stats").status, 200)
        XCTAssertEqual(try RawHTTPConnection(port: port).get("/stats", headers: [("Host", "localhost")]).status, 200)
        XCTAssertEqual(try RawHTTPConnection(port: port).get("/stats", headers: [("Host", "attacker.example")]).status,
                       421, "a rebound page cannot read /stats of a LAN-mode proxy")
        XCTAssertEqual(try RawHTTPConnection(port: port).get("/metrics", headers: [("Host", "attacker.example")]).status,
                       421)
    }
}
