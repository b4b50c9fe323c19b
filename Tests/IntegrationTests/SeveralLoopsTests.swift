import CacheStorage
import Foundation
import HTTPCache
import XCTest

/// `loops > 1`: every loop accepts clients; hits of complete, fresh
/// resources are answered on the loop that accepted them, anything else is
/// handed with its connection to the loop owning the resource. Byte-exact
/// either way, one origin download per resource, and a removal is seen everywhere.
final class SeveralLoopsTests: XCTestCase {
    /// Enough connections that both loops get some (the kernel spreads them
    /// by address and port: all on one loop has odds of 2^-(n-1)).
    private let clients = 16

    private func fixture() throws -> ProxyFixture {
        try ProxyFixture { configuration in
            configuration.loops = 2
            configuration.revalidateAfter = 3600  // fresh: hits need no origin
        }
    }

    /// Runs `body` once per client, each on its own thread and keep-alive connection.
    private func eachClient(_ fixture: ProxyFixture, _ body: @escaping @Sendable (Int, RawHTTPConnection) throws -> Void) throws {
        let failures = Failures()
        let port = fixture.server.servingPort
        DispatchQueue.concurrentPerform(iterations: clients) { index in
            do {
                let connection = try RawHTTPConnection(port: port, timeout: 30)
                defer { connection.close() }
                try body(index, connection)
            } catch {
                failures.add("client \(index): \(error)")
            }
        }
        XCTAssertEqual(failures.all, [])
    }

    func testHitsOnEveryLoopAreByteExact() throws {
        let fixture = try fixture()
        let file = try fixture.file("movie.bin", size: 1 << 20, seed: 11)
        XCTAssertEqual(try fixture.get(file.name).body, file.bytes)  // cached now
        let path = try fixture.proxyPath(file.name)
        let bytes = file.bytes
        try eachClient(fixture) { index, connection in
            var random = SystemRandomNumberGenerator()
            for round in 0..<12 {
                if round % 4 == 0 {
                    let whole = try connection.get(path)
                    guard whole.status == 200, whole.body == bytes else { throw Mismatch("whole body, client \(index)") }
                } else {
                    let start = Int.random(in: 0..<(bytes.count - 70_000), using: &random)
                    let end = start + Int.random(in: 0..<65_536, using: &random)
                    let part = try connection.get(path, range: "bytes=\(start)-\(end)")
                    guard part.status == 206, part.body == Array(bytes[start...end]),
                          part.header("Content-Range") == "bytes \(start)-\(end)/\(bytes.count)" else {
                        throw Mismatch("range \(start)-\(end), client \(index)")
                    }
                }
            }
        }
        let json = try fixture.stats()
        XCTAssertEqual(json["loops"] as? Int, 2)
        XCTAssertGreaterThan(json["hits_on_other_loops"] as? Int ?? 0, 0, "the other loop answered hits itself")
        XCTAssertEqual((json["requests_by_cache"] as? [String: Int])?["HIT"], clients * 12, "every response counted once")
        XCTAssertEqual(fixture.origin.accessLog().filter { $0.uri == "/" + file.name }.count, 1, "one origin download")
    }

    /// A miss on a loop that does not own the resource goes to the owner's
    /// loop with the connection, the requests pipelined behind it included,
    /// and comes back once idle; a conditional request, a HEAD and an
    /// unsatisfiable range are answered from the copy like the owner would.
    func testMissesAreHandedOverWithTheirPipeline() throws {
        let fixture = try fixture()
        let files = try (0..<clients).map { try fixture.file("part\($0).bin", size: 200_000 + $0, seed: UInt64(100 + $0)) }
        let paths = try files.map { try fixture.proxyPath($0.name) }
        let expected = files.map(\.bytes)
        try eachClient(fixture) { index, connection in
            // Uncached: handed over, then the pipelined ping and hit ride along.
            let path = paths[index]
            try connection.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                + "GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                + "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=100-199\r\n\r\n")
            let miss = try connection.readResponse()
            let ping = try connection.readResponse()
            let range = try connection.readResponse()
            guard miss.status == 200, miss.body == expected[index] else { throw Mismatch("miss, client \(index)") }
            guard ping.body == Array("pong\n".utf8) else { throw Mismatch("ping, client \(index)") }
            guard range.status == 206, range.body == Array(expected[index][100...199]) else {
                throw Mismatch("range after the miss, client \(index)")
            }
            // Idle again, the connection went back to its loop: this hit is answered there.
            guard try connection.get(path).body == expected[index] else { throw Mismatch("hit after, client \(index)") }
        }
        // Misses that reached a loop not owning them were handed over; connections that came home answer hits there.
        let afterMisses = try fixture.stats()
        XCTAssertGreaterThan(afterMisses["loop_handoffs"] as? Int ?? 0, 0, "misses on the other loop were handed over")
        XCTAssertGreaterThan(afterMisses["hits_on_other_loops"] as? Int ?? 0, 0,
                             "handed-over connections came back and had their next hit answered at home")
        // All cached now: the same answers from copies on a fresh set of connections.
        try eachClient(fixture) { index, connection in
            let path = paths[(index + 1) % paths.count]
            let bytes = expected[(index + 1) % paths.count]
            let full = try connection.get(path)
            guard full.status == 200, full.body == bytes, let etag = full.header("ETag") else {
                throw Mismatch("hit, client \(index)")
            }
            let unchanged = try connection.get(path, headers: [("If-None-Match", etag)])
            guard unchanged.status == 304, unchanged.body.isEmpty else { throw Mismatch("304, client \(index)") }
            let head = try connection.request(method: "HEAD", path: path)
            guard head.status == 200, head.body.isEmpty, head.header("Content-Length") == String(bytes.count) else {
                throw Mismatch("HEAD, client \(index)")
            }
            let beyond = try connection.get(path, range: "bytes=\(bytes.count + 10)-")
            guard beyond.status == 416, beyond.header("Content-Range") == "bytes */\(bytes.count)" else {
                throw Mismatch("416, client \(index)")
            }
        }
        for file in files {
            XCTAssertEqual(fixture.origin.accessLog().filter { $0.uri == "/" + file.name }.count, 1, file.name)
        }
    }

    /// A resource answered from copies on the other loop is in use like one
    /// under a reader: filling the cache past its limit while slow clients
    /// are mid-body does not evict it, and they get every byte.
    func testCopiesKeepTheirResourceInUse() throws {
        let fixture = try ProxyFixture { configuration in
            configuration.loops = 2
            configuration.revalidateAfter = 3600
            configuration.maxCacheSize = 20_000_000
        }
        let slow = try fixture.file("slow.bin", size: 12_000_000, seed: 31)
        let other = try fixture.file("other.bin", size: 12_000_000, seed: 32)
        // A probe owned by the same loop as the slow one: a connection whose
        // probe hit is a copy reads the slow one from copies too.
        let owner = { (name: String) in
            StoreGroup.shard(ofKey: ResourceStore.key(for: fixture.origin.url("/" + name)), count: 2)
        }
        let probeName = (0..<64).map { "probe\($0).bin" }.first { owner($0) == owner(slow.name) }!
        let probe = try fixture.file(probeName, size: 1000, seed: 33)
        XCTAssertBytes(try fixture.get(slow.name).body, equal: slow)  // cached, and the oldest
        XCTAssertBytes(try fixture.get(probe.name).body, equal: probe)
        // Keep connections the other loop accepted: their hits count there.
        let probePath = try fixture.proxyPath(probe.name)
        // (Those on the owner's loop stay open too: new connections go to the loop holding fewer.)
        var onOtherLoop: [RawHTTPConnection] = []
        var onOwnerLoop: [RawHTTPConnection] = []
        defer { for connection in onOwnerLoop { connection.close() } }
        for _ in 0..<64 where onOtherLoop.count < 4 {
            let connection = try fixture.connect()
            let before = try fixture.stats()["hits_on_other_loops"] as? Int ?? 0
            XCTAssertBytes(try connection.get(probePath).body, equal: probe)
            if try fixture.stats()["hits_on_other_loops"] as? Int ?? 0 > before {
                onOtherLoop.append(connection)
            } else {
                onOwnerLoop.append(connection)
            }
        }
        XCTAssertEqual(onOtherLoop.count, 4)
        // Each takes the head of the big one and stalls with most of the body unsent.
        let path = try fixture.proxyPath(slow.name)
        for reader in onOtherLoop {
            try reader.sendRequest(path: path)
            XCTAssertEqual(try reader.readResponseHead().status, 200)
        }
        let readers = onOtherLoop
        XCTAssertBytes(try fixture.get(other.name).body, equal: other)
        Thread.sleep(forTimeInterval: 0.2)
        let cached = fixture.server.cachedResources()
        XCTAssertTrue(cached.contains { $0.url.hasSuffix("/slow.bin") && $0.isInUse }, "evicted under its readers")
        for reader in readers {
            XCTAssertBytes(try reader.readRawBytes(12_000_000), equal: slow)
            reader.close()
        }
        // Once every copy is gone (a second or two), it is idle again and the limit is enforced.
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) { fixture.server.cacheSize() <= 20_000_000 })
    }

    /// The kernel spreads connections by address, not load: a loop holding
    /// two more connections than another hands a new one over at once, so
    /// clients that stay connected end up evenly spread. Which loop holds a
    /// connection shows in the stats: its hit of the other loop's resource
    /// is counted as answered from a copy.
    func testNewConnectionsAreSpreadOverTheLoops() throws {
        let fixture = try fixture()
        let file = try fixture.file("spread.bin", size: 20_000, seed: 41)
        XCTAssertEqual(try fixture.get(file.name).body, file.bytes)  // cached
        let path = try fixture.proxyPath(file.name)
        // One connection asks for the stats throughout (it counts on its loop too).
        let statsConnection = try fixture.connect()
        var held = [statsConnection]
        defer { for connection in held { connection.close() } }
        func hitsOnOtherLoops() throws -> Int {
            let body = try statsConnection.get("/stats").body
            let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
            return json["hits_on_other_loops"] as? Int ?? -1
        }
        var onOwner = 0
        for _ in 0..<24 {
            let connection = try fixture.connect()
            held.append(connection)
            let before = try hitsOnOtherLoops()
            XCTAssertEqual(try connection.get(path).body, file.bytes)
            if try hitsOnOtherLoops() == before { onOwner += 1 }
        }
        // Balanced, the 25 differ by at most 2; the stats connection may be on either side.
        XCTAssertLessThanOrEqual(abs(onOwner - (24 - onOwner)), 3, "\(onOwner) of 24 on the owner's loop")
        XCTAssertEqual(try fixture.stats()["open_connections"] as? Int, 26)  // with this request's own
    }

    /// After a removal, no loop answers from its copy: the next request of
    /// each client downloads again (once, shared), with the new bytes.
    func testRemovalIsSeenOnEveryLoop() throws {
        let fixture = try fixture()
        let file = try fixture.file("clip.bin", size: 300_000, seed: 21)
        let path = try fixture.proxyPath(file.name)
        XCTAssertEqual(try fixture.get(file.name).body, file.bytes)
        let original = file.bytes
        try eachClient(fixture) { index, connection in
            guard try connection.get(path).body == original else { throw Mismatch("hit, client \(index)") }
        }
        XCTAssertGreaterThan(try fixture.stats()["hits_on_other_loops"] as? Int ?? 0, 0)

        let changed = try fixture.file("clip.bin", size: 300_000, seed: 22)  // new bytes at the origin
        try fixture.server.removeResource(for: fixture.origin.url("/" + file.name))
        let replaced = changed.bytes
        try eachClient(fixture) { index, connection in
            guard try connection.get(path).body == replaced else { throw Mismatch("after removal, client \(index)") }
        }
        XCTAssertEqual(fixture.origin.accessLog().filter { $0.uri == "/" + file.name }.count, 2,
                       "one download before the removal, one after, shared by every client")
    }
}
