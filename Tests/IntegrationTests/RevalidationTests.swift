import Foundation
import HTTPCache
import XCTest

/// What a revalidation's answer does to the stored response (issue 32):
/// whatever the stored status, the origin's new answer replaces it (RFC 9111
/// §4.3.3), and Cache-Status says what happened (RFC 9211), in the reverse
/// and forward modes. nginx is the origin where it can give the answer (a
/// live segment missing, then written); the scripted origin elsewhere (one
/// path answering one status, then another).
final class RevalidationTests: TransparentCacheCase {
    /// A live packager's answers: a segment not yet written is a 404 with an
    /// Expires in the past; a written one is fresh for a while.
    static let locations = """
        location /live/ { add_header Expires $live_expires always; }
        location /zero/ { add_header Cache-Control "max-age=0"; }
        location /fresh/ { add_header Cache-Control "max-age=600"; }
"""
    static let httpConfig = """
        map $status $live_expires { 404 "Thu, 01 Jan 1970 00:00:00 GMT"; default ""; }
"""
    static let past = "Thu, 01 Jan 1970 00:00:00 GMT"

    override func setUpWithError() throws {
        try startOrigin(prefix: "httpcache-revalidation", folders: ["live", "zero", "fresh", "dated"], locations: Self.locations,
                        httpConfig: Self.httpConfig)
    }

    /// A fresh proxy (empty cache) in `mode` in front of `base` (see `TransparentProxies`).
    private func start(_ mode: Mode, base: String, clock: TestClock? = nil)
        throws -> (RawHTTPConnection, (String) -> String) {
        try proxies.start(mode, base: base, clock: clock)
    }

    // MARK: replacement (RFC 9111 §4.3.3)

    func testTheOriginsNewAnswerReplacesAStoredStatus() throws {
        let faulty = try FaultyOrigin()
        let base = String(faulty.url("/").dropLast())
        let stale = ["Expires": Self.past]
        for mode in Mode.allCases {
            let (client, target) = try start(mode, base: base)
            // The new answer as origins send it: ranges honoured, Range
            // ignored (a whole 200), or chunked; always without validators
            // and as long as the old body, so nothing but the status tells
            // that it changed.
            let answers: [Fault] = [.none, .ignoreRange, .chunked(piece: 4)]
            for (index, status) in [203, 204, 301, 404, 410, 500].enumerated() {
                let path = "/\(mode.rawValue)/\(status)"
                var fields = stale
                if status == 301 { fields["Location"] = "/elsewhere" }
                let old = Array("stored \(status)\n".utf8)
                faulty.serve(path, body: old, fault: .status(status, fields: fields))
                let first = try client.request(path: target(path))
                XCTAssertEqual(first.status, status, "\(mode) \(path)")
                XCTAssertEqual(first.body, status == 204 ? [] : old, "\(mode) \(path)")
                XCTAssertTrue(first.header("Cache-Status")?.hasSuffix("; stored") ?? false,
                              "\(mode) \(path): \(first.header("Cache-Status") ?? "none")")
                // The origin has something else now: the client gets it, and it is what is stored.
                let new = Array("fresh! \(status)\n".utf8)
                XCTAssertEqual(new.count, old.count)
                faulty.serve(path, body: new, fault: answers[index % answers.count])
                let second = try client.request(path: target(path))
                XCTAssertEqual(second.status, 200, "\(mode) \(path): the origin's 200 replaces the stored \(status)")
                XCTAssertEqual(second.body, new, "\(mode) \(path)")
                let cacheStatus = second.header("Cache-Status") ?? "none"
                XCTAssertTrue(cacheStatus.hasPrefix("httpcache; fwd=stale; fwd-status=20"), "\(mode) \(path): \(cacheStatus)")
                XCTAssertTrue(cacheStatus.hasSuffix("; stored"), "\(mode) \(path): \(cacheStatus)")
                let third = try client.request(path: target(path))
                XCTAssertEqual(third.status, 200, "\(mode) \(path): the 200 is what is stored now")
                XCTAssertEqual(third.body, new, "\(mode) \(path)")
            }
        }
    }

    func testAStored200IsReplacedByANewStatusAndBackAgain() throws {
        let faulty = try FaultyOrigin()
        let base = String(faulty.url("/").dropLast())
        for mode in Mode.allCases {
            let (client, target) = try start(mode, base: base)
            let path = "/\(mode.rawValue)/flip"
            let body = Array("a body that will go away\n".utf8)
            faulty.serve(path, body: body, fault: .status(200, fields: ["Expires": Self.past]))
            XCTAssertEqual(try client.request(path: target(path)).body, body, "\(mode)")
            // Gone at the origin: the 404 is forwarded and stored in the 200's place.
            let gone = Array("gone\n".utf8)
            faulty.serve(path, body: gone, fault: .status(404, fields: ["Expires": Self.past]))
            for round in 0..<2 {
                let response = try client.request(path: target(path))
                XCTAssertEqual(response.status, 404, "\(mode) round \(round)")
                XCTAssertEqual(response.body, gone, "\(mode) round \(round)")
            }
            // Back: the 200 replaces the 404.
            let back = Array("back again\n".utf8)
            faulty.serve(path, body: back, fault: .status(200, fields: ["Cache-Control": "max-age=600"]))
            let again = try client.request(path: target(path))
            XCTAssertEqual(again.status, 200, "\(mode)")
            XCTAssertEqual(again.body, back, "\(mode)")
            let hit = try client.request(path: target(path))
            XCTAssertEqual(hit.body, back, "\(mode)")
            XCTAssertTrue(hit.header("Cache-Status")?.hasPrefix("httpcache; hit") ?? false,
                          "\(mode): \(hit.header("Cache-Status") ?? "none")")
        }
    }

    func testALiveSegmentRequestedBeforeItExistsPlaysOnceItDoes() throws {
        let live = root.appendingPathComponent("live")
        for mode in ["reverse", "forward", "proxy URL"] {
            let name = "seg-\(mode.prefix(3))"
            let playlist = { (segments: Int) in
                "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n"
                    + (0..<segments).map { "#EXTINF:2.0,\n\(name)\($0).ts\n" }.joined()
            }
            _ = try TestFile.random(size: 40_000, seed: 1, in: live, name: "\(name)0.ts")
            try Data(playlist(1).utf8).write(to: live.appendingPathComponent("\(name).m3u8"))
            let send: (String, [(String, String)]) throws -> RawResponse
            if mode == "proxy URL" {
                _ = try start(.forward, base: origin.baseURL)
                let proxy = try XCTUnwrap(proxies.server)
                send = { try RawHTTPClient.get(url: try proxy.proxyURL(for: self.origin.url($0)), headers: $1, timeout: 30) }
            } else {
                let (connection, target) = try start(mode == "reverse" ? .reverse : .forward, base: origin.baseURL)
                send = { try connection.request(path: target($0), headers: $1) }
            }
            let client = { (path: String) in try send(path, []) }
            XCTAssertEqual(try client("/live/\(name).m3u8").status, 200, mode)
            // A player a little ahead of the packager: the next segment is not written yet.
            for _ in 0..<2 {
                XCTAssertEqual(try client("/live/\(name)1.ts").status, 404, "\(mode): not written yet")
            }
            let segment = try TestFile.random(size: 150_000, seed: 7, in: live, name: "\(name)1.ts")
            try Data(playlist(2).utf8).write(to: live.appendingPathComponent("\(name).m3u8"))
            // The player reloads the playlist a target duration later; here
            // no-cache stands in for the time that would have passed.
            let reloaded = try send("/live/\(name).m3u8", [("Cache-Control", "no-cache")])
            XCTAssertTrue(reloaded.bodyString.contains("\(name)1.ts"), "\(mode): \(reloaded.bodyString)")
            for round in 0..<2 {
                let response = try client("/live/\(name)1.ts")
                XCTAssertEqual(response.status, 200, "\(mode) round \(round): plays as soon as the origin has it")
                XCTAssertBytes(response.body, equal: segment, "\(mode) round \(round)")
            }
        }
    }

    // MARK: time passing (RFC 9111 §4.2), on an injected clock

    func testExplicitAndHeuristicLifetimesEndOnTheCachesClock() throws {
        let fresh = try TestFile.random(size: 20_000, seed: 11, in: root.appendingPathComponent("fresh"), name: "f.bin")
        let dated = try TestFile.random(size: 20_000, seed: 12, in: root.appendingPathComponent("dated"), name: "d.bin")
        // Published a day ago, no Cache-Control: fresh for 10% of that (8640 s).
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -86_400)],
                                              ofItemAtPath: root.appendingPathComponent("dated/d.bin").path)
        for mode in Mode.allCases {
            // A proxy and clock per path: the origin's Date follows the wall clock.
            for (path, file, lifetime) in [("/fresh/f.bin", fresh, 600), ("/dated/d.bin", dated, 8640)] {
                let clock = TestClock()
                let (client, target) = try start(mode, base: origin.baseURL, clock: clock)
                func status(_ path: String, _ file: TestFile) throws -> String {
                    let response = try client.request(path: target(path))
                    XCTAssertBytes(response.body, equal: file, "\(mode) \(path)")
                    return response.header("Cache-Status") ?? "none"
                }
                XCTAssertTrue(try status(path, file).contains("fwd=uri-miss"), "\(mode) \(path)")
                clock.advance(seconds: lifetime - 10)
                let hit = try status(path, file)
                XCTAssertTrue(hit.hasPrefix("httpcache; hit; ttl="), "\(mode) \(path): still fresh: \(hit)")
                clock.advance(seconds: 20)
                let stale = try status(path, file)
                XCTAssertTrue(stale.hasPrefix("httpcache; fwd=stale; fwd-status=304"), "\(mode) \(path): \(stale)")
            }
        }
    }

    // MARK: Cache-Status (RFC 9211 §2)

    func testStaleServedWithoutTheOriginSaysNoForwardStatusAndNotStored() throws {
        let body = try TestFile.random(size: 30_000, seed: 3, in: root.appendingPathComponent("zero"), name: "z.bin")
        for mode in Mode.allCases {
            try origin.start()
            let (client, target) = try start(mode, base: origin.baseURL)
            XCTAssertBytes(try client.request(path: target("/zero/z.bin")).body, equal: body, "\(mode)")
            XCTAssertBytes(try client.get(target("/zero/z.bin"), range: "bytes=0-99").body, equal: body,
                           range: 0..<100, "\(mode)")
            origin.stop()
            let stale = try client.request(path: target("/zero/z.bin"))
            XCTAssertEqual(stale.status, 200, "\(mode)")
            XCTAssertBytes(stale.body, equal: body, "\(mode)")
            let cacheStatus = stale.header("Cache-Status") ?? "none"
            XCTAssertTrue(cacheStatus.hasPrefix("httpcache; fwd=stale; ttl="), "\(mode): \(cacheStatus)")
            XCTAssertFalse(cacheStatus.contains("fwd-status"), "\(mode): the origin sent nothing: \(cacheStatus)")
            XCTAssertFalse(cacheStatus.contains("stored"), "\(mode): nothing was stored: \(cacheStatus)")
        }
    }

    func testStaleServedOnAnOriginErrorSaysItsStatusAndNotStored() throws {
        let faulty = try FaultyOrigin()
        let base = String(faulty.url("/").dropLast())
        for mode in Mode.allCases {
            let (client, target) = try start(mode, base: base)
            let path = "/\(mode.rawValue)/sie"
            let body = Array("kept through errors\n".utf8)
            faulty.serve(path, body: body, fault: .status(200, fields: ["Cache-Control": "max-age=0, stale-if-error=600"]))
            XCTAssertEqual(try client.request(path: target(path)).body, body, "\(mode)")
            faulty.setFault(path, .status(503, fields: [:]))
            let stale = try client.request(path: target(path))
            XCTAssertEqual(stale.status, 200, "\(mode): within stale-if-error")
            XCTAssertEqual(stale.body, body, "\(mode)")
            let cacheStatus = stale.header("Cache-Status") ?? "none"
            XCTAssertTrue(cacheStatus.hasPrefix("httpcache; fwd=stale; fwd-status=503; ttl="), "\(mode): \(cacheStatus)")
            XCTAssertFalse(cacheStatus.contains("stored"), "\(mode): \(cacheStatus)")
        }
    }

    func testACollapsedRequestSaysCollapsed() throws {
        let faulty = try FaultyOrigin()
        let base = String(faulty.url("/").dropLast())
        for mode in Mode.allCases {
            _ = try start(mode, base: base)
            let port = try XCTUnwrap(proxies.server).servingPort
            let path = "/\(mode.rawValue)/slow"
            faulty.serve(path, body: Array("slow".utf8), fault: .delayed(0.5))
            let target = mode == .reverse ? path : base + path
            let first = try RawHTTPConnection(port: port)
            let second = try RawHTTPConnection(port: port)
            try first.sendRequest(path: target)
            XCTAssertTrue(TestTools.waitUntil(timeout: 5) { faulty.requests(for: path).count == 1 })
            try second.sendRequest(path: target)
            let a = try first.readResponse(), b = try second.readResponse()
            XCTAssertEqual([a.bodyString, b.bodyString], ["slow", "slow"], "\(mode)")
            XCTAssertFalse(a.header("Cache-Status")?.contains("collapsed") ?? true, "\(mode)")
            XCTAssertTrue(b.header("Cache-Status")?.hasPrefix("httpcache; fwd=uri-miss") ?? false, "\(mode)")
            XCTAssertTrue(b.header("Cache-Status")?.hasSuffix("; collapsed") ?? false,
                          "\(mode): \(b.header("Cache-Status") ?? "none")")
            XCTAssertEqual(faulty.requests(for: path).count, 1, "\(mode)")
        }
    }
}
