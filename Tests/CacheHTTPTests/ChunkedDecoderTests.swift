import CacheHTTP
import XCTest

final class ChunkedDecoderTests: XCTestCase {
    /// Feeds `input` in the given pieces; returns the body, total bytes
    /// consumed, and whether the decoder finished.
    private func decode(_ pieces: [[UInt8]]) throws -> (body: [UInt8], consumed: Int, done: Bool) {
        var decoder = ChunkedDecoder()
        var body: [UInt8] = []
        var consumed = 0
        var done = false
        for piece in pieces {
            var offset = 0
            // A caller re-feeds what was not consumed only after it is done;
            // before that the decoder must consume everything it is given.
            let r = try piece.withUnsafeBytes { try decoder.feed($0) { body.append(contentsOf: $0) } }
            offset += r.consumed
            consumed += r.consumed
            done = r.done
            if done { break }
            XCTAssertEqual(offset, piece.count, "undone decoder left input")
        }
        return (body, consumed, done)
    }

    private let sample = Array(("4;name=value\r\nWiki\r\n" + "5 ; x\r\npedia\r\n" + "E\r\n in\r\n\r\nchunks.\r\n"
        + "00000\r\nTrailer: yes\r\nOther: 1\r\n\r\n").utf8)
    private let sampleBody = Array("Wikipedia in\r\n\r\nchunks.".utf8)

    func testWholeInput() throws {
        let tail = Array("GET / HTTP/1.1\r\n".utf8)
        let r = try decode([sample + tail])
        XCTAssertEqual(r.body, sampleBody)
        XCTAssertTrue(r.done)
        XCTAssertEqual(r.consumed, sample.count) // the next message is left alone
    }

    func testEverySplitPoint() throws {
        for i in 0...sample.count {
            let r = try decode([Array(sample[..<i]), Array(sample[i...])])
            XCTAssertEqual(r.body, sampleBody, "split at \(i)")
            XCTAssertTrue(r.done, "split at \(i)")
            XCTAssertEqual(r.consumed, sample.count, "split at \(i)")
            for j in i...sample.count {
                let r3 = try decode([Array(sample[..<i]), Array(sample[i..<j]), Array(sample[j...])])
                XCTAssertEqual(r3.body, sampleBody, "split at \(i), \(j)")
                XCTAssertTrue(r3.done)
            }
        }
        // Byte by byte.
        let r = try decode(sample.map { [$0] })
        XCTAssertEqual(r.body, sampleBody)
        XCTAssertTrue(r.done)
    }

    func testIncompleteIsNotDone() throws {
        for i in 0..<sample.count {
            let r = try decode([Array(sample[..<i])])
            XCTAssertFalse(r.done, "prefix \(i)")
            XCTAssertEqual(r.consumed, i)
        }
    }

    func testDataIsNotCopiedThroughOddSizes() throws {
        let data = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let wire = Array("186a0\r\n".utf8) + data + Array("\r\n0\r\n\r\n".utf8)
        let pieces = stride(from: 0, to: wire.count, by: 4093).map { Array(wire[$0..<min($0 + 4093, wire.count)]) }
        let r = try decode(pieces)
        XCTAssertEqual(r.body, data)
        XCTAssertTrue(r.done)
    }

    func testDoneDecoderConsumesNothing() throws {
        var d = ChunkedDecoder()
        let end = Array("0\r\n\r\n".utf8)
        let r1 = try end.withUnsafeBytes { try d.feed($0) { _ in } }
        XCTAssertEqual(r1.consumed, 5)
        XCTAssertTrue(r1.done)
        XCTAssertTrue(d.isDone)
        let r2 = try end.withUnsafeBytes { try d.feed($0) { _ in } }
        XCTAssertEqual(r2.consumed, 0)
        XCTAssertTrue(r2.done)
    }

    func testErrors() {
        let longExt = "1;" + String(repeating: "x", count: 2000) + "\r\na\r\n0\r\n\r\n"
        let longTrailer = "0\r\nX: " + String(repeating: "y", count: 20000) + "\r\n\r\n"
        let cases: [(String, ChunkedError)] = [
            ("g\r\n", .badSize),                      // bad hex
            ("\r\n", .badSize),                       // no digits
            (";ext\r\n", .badSize),
            (" 1\r\nx\r\n", .badSize),
            ("1x\r\na\r\n", .badSize),
            ("-1\r\n", .badSize),
            ("0x10\r\n", .badSize),
            ("8000000000000000\r\n", .badSize),       // overflows Int64
            ("fffffffffffffffff\r\n", .badSize),
            ("1\ra", .badFraming),                    // bare CR after size
            ("1\na\r\n0\r\n\r\n", .badFraming),       // bare LF after size
            ("1\r\nab\r\n", .badFraming),             // data longer than size
            ("1\r\na\n0\r\n\r\n", .badFraming),       // missing CR after data
            ("1\r\na\rx", .badFraming),               // missing LF after data
            ("0\r\nX: 1\nY\r\n\r\n", .badFraming),    // bare LF in trailer
            ("0\r\n\n", .badFraming),
            ("0\r\n\rx", .badFraming),
            ("0\r\nX: 1\rx", .badFraming),
            (longExt, .lineTooLong),
            (String(repeating: "0", count: 1100) + "1\r\n", .lineTooLong),
            (longTrailer, .lineTooLong),
        ]
        for (input, expected) in cases {
            XCTAssertThrowsError(try decode([Array(input.utf8)]), input.prefix(40).debugDescription) { error in
                XCTAssertEqual(error as? ChunkedError, expected, input.prefix(40).debugDescription)
            }
        }
    }

    func testAcceptedOddities() throws {
        // Leading zeros, upper-case hex, BWS before extensions, quoted extension values.
        let input = "000A \t;a=\"b;c\"\r\n0123456789\r\n0;z\r\n\r\n"
        let r = try decode([Array(input.utf8)])
        XCTAssertEqual(r.body, Array("0123456789".utf8))
        XCTAssertTrue(r.done)
    }
}
