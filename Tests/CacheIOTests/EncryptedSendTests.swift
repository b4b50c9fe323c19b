// cs_conn_send_xts: ranges of files encrypted at rest, decrypted by the
// loop as the socket takes them, in order with the rest of the queue.
import CSupport
import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

final class EncryptedSendTests: XCTestCase {
    /// A file of `plain` enciphered as a data file is (whole units, the last
    /// one padded), with its own key and file id.
    final class EncryptedFile {
        let plain: [UInt8]
        let xts: OpaquePointer
        let fileID: UInt64
        let file: TempFile

        init(_ plain: [UInt8], keySeed: UInt64, fileID: UInt64) throws {
            self.plain = plain
            self.fileID = fileID
            let xts = try XCTUnwrap(cs_xts_new(patternBytes(64, seed: keySeed)))
            self.xts = xts
            let unit = Int(CS_XTS_UNIT)
            var bytes = plain + [UInt8](repeating: 0, count: (unit - plain.count % unit) % unit)
            let status = bytes.withUnsafeMutableBufferPointer {
                cs_xts_units(xts, 1, fileID, 0, $0.baseAddress, $0.count, unit)
            }
            XCTAssertEqual(status, 0)
            XCTAssertNotEqual(Array(bytes[0..<plain.count]), plain)
            file = try TempFile(bytes)
        }

        deinit { cs_xts_free(xts) }

        func send(_ conn: OpaquePointer?, _ range: Range<Int>) -> Int32 {
            cs_conn_send_xts(conn, file.fd, xts, fileID, Int64(range.lowerBound), range.count)
        }
    }

    func testRangesOfTwoFilesInterleavedWithMemoryToASlowReader() throws {
        let h = try LoopHarness()
        let a = try EncryptedFile(patternBytes((9 << 20) + 1234, seed: 11), keySeed: 1, fileID: 77)
        let b = try EncryptedFile(patternBytes(300 << 10, seed: 12), keySeed: 2, fileID: 5)
        // Unaligned starts and ends, adjacent ranges (merged), the last unit
        // of each file, and the two keys in turn (the loop's context re-keyed).
        var parts: [(EncryptedFile?, Range<Int>, [UInt8])] = [(nil, 0..<0, Array("HTTP/1.1 200 OK\r\n\r\n".utf8))]
        // More than the socket takes at once, so the rest waits in the queue.
        parts.append((a, 1..<(4 << 20) + 7, []))
        parts.append((a, (4 << 20) + 7..<(8 << 20), []))
        parts.append((nil, 0..<0, Array("<between>".utf8)))
        parts.append((b, 4095..<4097, []))
        parts.append((a, 5000..<70_000, []))
        parts.append((b, (100 << 10)..<b.plain.count, []))
        parts.append((a, (8 << 20) + 333..<a.plain.count, []))
        parts.append((nil, 0..<0, Array("-- end --".utf8)))
        var expected: [UInt8] = []
        for (file, range, bytes) in parts { expected += file.map { Array($0.plain[range]) } ?? bytes }

        let server = ConnProbe()
        server.onDrain = { p in
            XCTAssertEqual(cs_conn_queued(p.conn), 0)
            XCTAssertEqual(cs_conn_bytes_sent(p.conn), UInt64(expected.count))
            cs_conn_close_after_drain(p.conn)
        }
        var queued = 0
        let (_, port) = startListener(h) { conn in
            server.bind(conn)
            for (file, range, bytes) in parts {
                if let file {
                    XCTAssertEqual(file.send(conn, range), 0)
                } else {
                    XCTAssertEqual(cs_conn_write(conn, bytes, bytes.count), 0)
                }
            }
            queued = cs_conn_queued(conn)
        }
        let client = try BlockingClient(port: port, receiveBuffer: 32 * 1024)
        let (got, err) = client.readToEOF(chunk: 16 * 1024, pauseMicros: 200)
        XCTAssertEqual(err, 0)
        XCTAssertEqual(got.count, expected.count)
        XCTAssertTrue(got == expected, "decrypted output differs at \(got.indices.first { $0 < expected.count && got[$0] != expected[$0] } ?? -1) of \(got.count)")
        XCTAssertTrue(server.log.wait { $0.closes.count == 1 })
        h.sync {}
        XCTAssertGreaterThan(queued, 0, "the reader never made the sender wait")
        XCTAssertEqual(server.log.value.drains, 1)
        XCTAssertEqual(server.log.value.closes, [0])
        h.stop()
    }

    func testSmallResponsesSentAtOnce() throws {
        let h = try LoopHarness()
        let a = try EncryptedFile(patternBytes(200_000, seed: 21), keySeed: 3, fileID: 1)
        let head = Array("HTTP/1.1 206 Partial Content\r\n\r\n".utf8)
        let ranges = [0..<1, 4096..<8192, 10..<20_000, 123_457..<190_000, 199_999..<200_000]
        let server = ConnProbe()
        var queued: [Int] = []
        let (_, port) = startListener(h) { conn in
            server.bind(conn)
            for range in ranges {
                let status = cs_conn_send_head_xts(conn, head, head.count, a.file.fd, a.xts, a.fileID,
                                                   Int64(range.lowerBound), range.count)
                XCTAssertEqual(status, 0)
                queued.append(cs_conn_queued(conn))
            }
            cs_conn_close_after_drain(conn)
        }
        let client = try BlockingClient(port: port)
        let (got, err) = client.readToEOF()
        XCTAssertEqual(err, 0)
        let expected = ranges.flatMap { head + a.plain[$0] }
        XCTAssertTrue(got == expected, "decrypted output differs")
        XCTAssertTrue(server.log.wait { $0.closes.count == 1 })
        h.sync {}
        XCTAssertEqual(queued.first, 0, "a small first response waits in the queue")
        XCTAssertEqual(server.log.value.closes, [0])
        h.stop()
    }

    /// Heads with large ranges: the first goes out with its first piece at
    /// once, the second waits behind it in the queue; a slow reader gets both whole.
    func testHeadsWithLargeRangesToASlowReader() throws {
        let h = try LoopHarness()
        let a = try EncryptedFile(patternBytes(5 << 20, seed: 71), keySeed: 9, fileID: 6)
        let heads = [Array("HTTP/1.1 200 OK\r\n\r\n".utf8), Array("HTTP/1.1 206 Partial Content\r\n\r\n".utf8)]
        let ranges = [3..<(5 << 20), 4096..<(3 << 20) + 5]
        let (server, got, err, queued) = try sendHeadsWithRanges(h, a, heads: heads, ranges: ranges, pauseMicros: 100)
        XCTAssertEqual(err, 0)
        let expected = heads[0] + a.plain[ranges[0]] + heads[1] + a.plain[ranges[1]]
        XCTAssertEqual(got.count, expected.count)
        XCTAssertTrue(got == expected, "decrypted output differs")
        XCTAssertTrue(server.log.wait { $0.closes.count == 1 })
        h.sync {}
        XCTAssertEqual(server.log.value.closes, [0])
        XCTAssertGreaterThan(queued.first ?? 0, 0)
        XCTAssertEqual(queued.last, (queued.first ?? 0) + heads[1].count + ranges[1].count)
        h.stop()
    }

    /// Ranges cut where the pieces are cut (cs_internal.h: a range's first
    /// read on the loop takes at most 256 KiB, each read-ahead on the pool
    /// 512 KiB, a last unit held in part is read on the loop), starting and
    /// ending mid-unit, on a unit and on a piece boundary, up to the file's
    /// short last unit: byte for byte the plain source, in order with their heads.
    func testRangesAcrossPieceBoundariesMatchThePlainSource() throws {
        let h = try LoopHarness()
        let unit = Int(CS_XTS_UNIT)
        let loopRead = 256 << 10, piece = 512 << 10
        let a = try EncryptedFile(patternBytes((3 << 20) + 1000, seed: 81), keySeed: 10, fileID: 8)
        let ranges = [
            1..<(loopRead + piece + 1),  // the last unit, held in part, read on the loop
            (loopRead - 1)..<(loopRead + 2 * piece + unit),
            (3 * unit)..<(3 * unit + loopRead + 2 * piece),  // whole units, whole pieces
            (piece - 17)..<(piece + 17),
            ((3 << 20) - 5000)..<a.plain.count,  // up to the short last unit
            0..<a.plain.count,
        ]
        let heads = ranges.indices.map { Array("HTTP/1.1 206 Partial Content\r\nX-Range: \($0)\r\n\r\n".utf8) }
        let (server, got, err, queued) = try sendHeadsWithRanges(h, a, heads: heads, ranges: ranges, pauseMicros: 50)
        XCTAssertEqual(err, 0)
        let expected = zip(heads, ranges).flatMap { $0 + a.plain[$1] }
        XCTAssertEqual(got.count, expected.count)
        XCTAssertTrue(got == expected, "decrypted output differs at \(got.indices.first { $0 < expected.count && got[$0] != expected[$0] } ?? -1)")
        XCTAssertTrue(server.log.wait { $0.closes.count == 1 })
        h.sync {}
        XCTAssertEqual(server.log.value.closes, [0])
        XCTAssertGreaterThan(queued.last ?? 0, 0, "the reader never made the sender queue")
        h.stop()
    }

    /// Each head with its encrypted range on one connection (then closed
    /// after the drain), read by a slow client (32 KiB socket buffer, 16 KiB
    /// reads): the probe, what arrived, the read's error, and the bytes
    /// queued after each send.
    private func sendHeadsWithRanges(_ h: LoopHarness, _ a: EncryptedFile, heads: [[UInt8]], ranges: [Range<Int>],
                                     pauseMicros: UInt32) throws -> (ConnProbe, [UInt8], Int32, [Int]) {
        let server = ConnProbe()
        var queued: [Int] = []
        let (_, port) = startListener(h) { conn in
            server.bind(conn)
            for (head, range) in zip(heads, ranges) {
                XCTAssertEqual(cs_conn_send_head_xts(conn, head, head.count, a.file.fd, a.xts, a.fileID,
                                                     Int64(range.lowerBound), range.count), 0)
                queued.append(cs_conn_queued(conn))
            }
            cs_conn_close_after_drain(conn)
        }
        let client = try BlockingClient(port: port, receiveBuffer: 32 * 1024)
        let (got, err) = client.readToEOF(chunk: 16 * 1024, pauseMicros: pauseMicros)
        h.sync {}  // the listener's sends (and `queued`) are done once the reader saw the end
        return (server, got, err, queued)
    }

    func testRangePastTheFileEndClosesTheConnection() throws {
        let h = try LoopHarness()
        let a = try EncryptedFile(patternBytes(10_000, seed: 31), keySeed: 4, fileID: 2)
        let server = ConnProbe()
        var status: Int32 = 0
        let (_, port) = startListener(h) { conn in
            server.bind(conn)
            // The file holds 3 units (12,288 bytes): the range runs past them.
            status = a.send(conn, 8000..<20_000)
        }
        let client = try BlockingClient(port: port)
        let (got, _) = client.readToEOF()
        XCTAssertTrue(server.log.wait { $0.closes.count == 1 })
        h.sync {}
        XCTAssertEqual(status, -EIO)
        XCTAssertEqual(server.log.value.closes, [-EIO])
        XCTAssertEqual(got, [], "bytes of a range the file cannot hold were sent")
        h.stop()
    }

    /// The pieces after the first are read ahead on the pool: one past the
    /// file's end fails there, and the connection closes after the bytes before it.
    func testReadAheadPastTheFileEndClosesAfterTheGoodPieces() throws {
        let h = try LoopHarness()
        let a = try EncryptedFile(patternBytes(1 << 20, seed: 51), keySeed: 7, fileID: 3)
        let server = ConnProbe()
        let (_, port) = startListener(h) { conn in
            server.bind(conn)
            XCTAssertEqual(a.send(conn, 100..<(2 << 20)), 0)
        }
        let client = try BlockingClient(port: port, receiveBuffer: 32 * 1024)
        let (got, _) = client.readToEOF(chunk: 16 * 1024, pauseMicros: 100)
        XCTAssertTrue(server.log.wait { $0.closes.count == 1 })
        h.sync {}
        XCTAssertEqual(server.log.value.closes, [-EIO])
        XCTAssertLessThanOrEqual(got.count, a.plain.count - 100)
        XCTAssertTrue(got == Array(a.plain[100..<(100 + got.count)]), "bytes before the failure differ")
        h.stop()
    }

    /// Clients that go away mid-range, read-aheads in flight: nothing sent
    /// after, nothing used after it is freed (the jobs end on their own).
    func testClientsLeavingMidRangeWhileReadingAhead() throws {
        let h = try LoopHarness()
        let a = try EncryptedFile(patternBytes(6 << 20, seed: 61), keySeed: 8, fileID: 4)
        let servers = Shared([ConnProbe]())
        let (_, port) = startListener(h) { conn in
            let server = ConnProbe()
            server.bind(conn)
            servers.update { $0.append(server) }
            XCTAssertEqual(a.send(conn, 1..<a.plain.count), 0)
        }
        for round in 0..<8 {
            let client = try BlockingClient(port: port, receiveBuffer: 16 * 1024)
            let part = client.recv(exactly: 300_000 + round * 77_777)
            XCTAssertTrue(part == Array(a.plain[1..<(1 + part.count)]), "round \(round)")
        }
        XCTAssertTrue(servers.wait { $0.count == 8 && $0.allSatisfy { $0.log.value.closes.count == 1 } })
        h.stop()
    }

    /// A decryption context of another thread gives what the cipher's own gives, in place or apart.
    func testOwnDecryptionContextMatchesTheCipher() throws {
        let unit = Int(CS_XTS_UNIT)
        let plain = patternBytes(8 * unit, seed: 41)
        let keys = [patternBytes(64, seed: 5), patternBytes(64, seed: 6)]
        let ciphers = try keys.map { try XCTUnwrap(cs_xts_new($0)) }
        defer { ciphers.forEach { cs_xts_free($0) } }
        let enciphered: [[UInt8]] = ciphers.map { xts in
            var bytes = plain
            XCTAssertEqual(bytes.withUnsafeMutableBufferPointer { cs_xts_units(xts, 1, 9, 3, $0.baseAddress, $0.count, unit) }, 0)
            return bytes
        }
        let refs = ciphers.map { LoopRef($0) }
        let results = Shared([[UInt8]]())
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let dec = cs_xts_dec_new()
            defer { cs_xts_dec_free(dec) }
            // Both keys in turn, twice: the context follows the cipher it is given.
            for i in [0, 1, 1, 0] {
                var out = [UInt8](repeating: 0, count: plain.count)
                let status = enciphered[i].withUnsafeBufferPointer { input in
                    out.withUnsafeMutableBufferPointer {
                        cs_xts_dec_units(dec, refs[i].ptr, 9, 3, input.baseAddress, $0.baseAddress, plain.count, unit)
                    }
                }
                results.update { $0.append(status == 0 ? out : []) }
            }
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + testTimeout), .success)
        XCTAssertEqual(results.value.count, 4)
        for out in results.value { XCTAssertTrue(out == plain, "decrypted bytes differ") }
        var wrongUnit = enciphered[0]
        XCTAssertEqual(wrongUnit.withUnsafeMutableBufferPointer { cs_xts_units(ciphers[0], 0, 9, 4, $0.baseAddress, $0.count, unit) }, 0)
        XCTAssertFalse(wrongUnit == plain, "the unit number does not enter the tweak")
    }
}
