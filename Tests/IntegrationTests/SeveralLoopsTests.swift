import Foundation
import HTTPCache
import XCTest

/// `loops > 1`: every loop accepts clients; hits of complete, fresh
/// resources are answered on the loop that accepted them, anything else is
/// handed with its connection to the engine's loop. Byte-exact either way,
/// one origin download per resource, and a removal is seen everywhere.
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

    private func stats(_ fixture: ProxyFixture) throws -> [String: Any] {
        let response = try RawHTTPClient.get(url: "http://127.0.0.1:\(fixture.server.port)/stats")
        XCTAssertEqual(response.status, 200)
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    /// Runs `body` once per client, each on its own thread and keep-alive connection.
    private func eachClient(_ fixture: ProxyFixture, _ body: @escaping @Sendable (Int, RawHTTPConnection) throws -> Void) throws {
        let failures = Failures()
        let port = fixture.server.port
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
        let json = try stats(fixture)
        XCTAssertEqual(json["loops"] as? Int, 2)
        XCTAssertGreaterThan(json["hits_on_other_loops"] as? Int ?? 0, 0, "the other loop answered hits itself")
        XCTAssertEqual((json["requests_by_cache"] as? [String: Int])?["HIT"], clients * 12, "every response counted once")
        XCTAssertEqual(fixture.origin.accessLog().filter { $0.uri == "/" + file.name }.count, 1, "one origin download")
    }

    /// A miss on a loop that cannot answer it goes to the engine's loop with
    /// the connection, the requests pipelined behind it included; a
    /// conditional request, a HEAD and an unsatisfiable range are answered
    /// from the copy like the engine's loop would.
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
        }
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
        let json = try stats(fixture)
        XCTAssertGreaterThan(json["loop_handoffs"] as? Int ?? 0, 0, "misses on the other loop were handed over")
        for file in files {
            XCTAssertEqual(fixture.origin.accessLog().filter { $0.uri == "/" + file.name }.count, 1, file.name)
        }
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
        XCTAssertGreaterThan(try stats(fixture)["hits_on_other_loops"] as? Int ?? 0, 0)

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

private struct Mismatch: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

private final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func add(_ failure: String) { lock.withLock { list.append(failure) } }
    var all: [String] { lock.withLock { list } }
}
