import CacheStorage
import Foundation
import HTTPCache
import XCTest

/// Hits from an encrypted folder: the socket's loop decrypts each file range
/// as it sends it (cs_conn_send_xts), on the owner loop or, for copies of
/// plain hits, on the loop that accepted the client, byte-exact either way.
final class EncryptedHitTests: XCTestCase {
    /// Enough connections that both loops get some (see SeveralLoopsTests).
    private let clients = 16

    private func fixture() throws -> ProxyFixture {
        try ProxyFixture { configuration in
            configuration.encryptionKey = EncryptionTests.key(9)
            configuration.loops = 2
            configuration.revalidateAfter = 3600  // fresh: hits need no origin
        }
    }

    func testHitsOnEveryLoopAreByteExact() throws {
        let fixture = try fixture()
        defer { fixture.stop() }
        // Not a whole number of units or pieces: the last unit is cut, ranges straddle pieces.
        let file = try fixture.file("movie.bin", size: (3 << 20) + 4321, seed: 21)
        XCTAssertEqual(try fixture.get(file.name).body, file.bytes)  // cached now
        let path = try fixture.proxyPath(file.name)
        let bytes = file.bytes
        let failures = Failures()
        let port = fixture.server.servingPort
        DispatchQueue.concurrentPerform(iterations: clients) { index in
            do {
                let connection = try RawHTTPConnection(port: port, timeout: 30)
                defer { connection.close() }
                var random = SystemRandomNumberGenerator()
                for round in 0..<10 {
                    if round % 5 == 0 {
                        let whole = try connection.get(path)
                        guard whole.status == 200, whole.body == bytes else { throw Mismatch("whole body, client \(index)") }
                    } else {
                        let start = round == 1 ? bytes.count - 5000 : Int.random(in: 0..<(bytes.count - 300_000), using: &random)
                        let end = min(bytes.count - 1, start + Int.random(in: 0..<300_000, using: &random))
                        let part = try connection.get(path, range: "bytes=\(start)-\(end)")
                        guard part.status == 206, part.body == Array(bytes[start...end]) else {
                            throw Mismatch("range \(start)-\(end), client \(index)")
                        }
                    }
                }
            } catch {
                failures.add("client \(index): \(error)")
            }
        }
        XCTAssertEqual(failures.all, [])
        let response = try RawHTTPClient.get(url: "http://127.0.0.1:\(port)/stats")
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        XCTAssertGreaterThan(json["hits_on_other_loops"] as? Int ?? 0, 0, "the other loop answered hits itself")
        XCTAssertEqual((json["requests_by_cache"] as? [String: Int])?["HIT"], clients * 10, "every response a hit")
        XCTAssertEqual(fixture.origin.accessLog().filter { $0.uri == "/" + file.name }.count, 1, "one origin download")
    }
}

extension EncryptedHitTests {
    /// Clients reading a resource while it downloads (in pieces, of unknown
    /// length): the ranges they are sent are decrypted while the loop writes
    /// the units after them, byte-exact.
    func testClientsDuringADownloadAreByteExact() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        let body = (0..<((4 << 20) + 777)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        origin.serve("/live.bin", body: body, fault: .chunked(piece: 50_001, pause: 0.001))
        let proxy = try TestProxy { $0.encryptionKey = EncryptionTests.key(10) }
        let target = origin.url("/live.bin")
        let url = try proxy.url(for: target)
        let failures = Failures()
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            do {
                Thread.sleep(forTimeInterval: 0.05 * Double(index))
                let response = try RawHTTPClient.get(url: url, timeout: 30)
                guard response.status == 200, response.body == body else {
                    throw Mismatch("client \(index): status \(response.status), \(response.body.count) bytes")
                }
            } catch {
                failures.add("\(error)")
            }
        }
        XCTAssertEqual(failures.all, [])
        let again = try proxy.get(target, range: "bytes=1000-")
        XCTAssertEqual(again.status, 206)
        XCTAssertTrue(again.body == Array(body[1000...]), "hit after the download")
    }
}
