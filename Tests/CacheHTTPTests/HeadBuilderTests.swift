import CacheHTTP
import XCTest

/// HeadBuilder must write exactly what HTTPResponseHead.serialized() writes.
final class HeadBuilderTests: XCTestCase {
    func testMatchesSerializedHead() {
        var builder = HeadBuilder(status: 206)
        builder.add("Server", "HTTPCache")
        builder.add("Content-Type", "video/mp4")
        builder.addContentRange(1000..<2000, total: 500_000)
        builder.add("Content-Length", decimal: 1000)
        builder.add("Connection", "keep-alive")

        let expected = HTTPResponseHead(status: 206, headers: HTTPHeaders([
            ("Server", "HTTPCache"), ("Content-Type", "video/mp4"),
            ("Content-Range", "bytes 1000-1999/500000"), ("Content-Length", "1000"), ("Connection", "keep-alive"),
        ])).serialized()
        XCTAssertEqual(builder.finish(), expected)
    }

    func testUnsatisfiedRangeZeroAndLargeNumbers() {
        var builder = HeadBuilder(status: 416)
        builder.addUnsatisfiedRange(total: 0)
        builder.add("Content-Length", decimal: 0)
        builder.add("X-Big", decimal: Int64.max)
        let text = String(decoding: builder.finish(), as: UTF8.self)
        XCTAssertEqual(text, "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */0\r\nContent-Length: 0\r\n"
                       + "X-Big: 9223372036854775807\r\n\r\n")
    }

    func testRoundTripsThroughTheParser() throws {
        var builder = HeadBuilder(status: 200, reason: "OK")
        builder.add("ETag", "\"abc\"")
        builder.add("Content-Length", decimal: 16384)
        let bytes = builder.finish()
        let parsed = try XCTUnwrap(bytes.withUnsafeBytes { raw -> (head: HTTPResponseHead, consumed: Int)? in
            if case .success(let value) = ResponseHeadParser.parse(raw) { return value }
            return nil
        })
        XCTAssertEqual(parsed.consumed, bytes.count)
        XCTAssertEqual(parsed.head.status, 200)
        XCTAssertEqual(parsed.head.headers["etag"], "\"abc\"")
        XCTAssertEqual(parsed.head.headers["content-length"], "16384")
    }

    /// Numbers are written two digits at a time: every length and every
    /// boundary between lengths comes out as `String(n)` does.
    func testDecimalsOfEveryLength() {
        var numbers: [Int64] = [0, 1, 9, 10, 11, 19, 99, 100, 101, 110, 999, 1000, 1001, 65535, 65536, 104_857_599,
                                Int64.max - 1, Int64.max]
        var power: Int64 = 10
        for _ in 1...18 {
            numbers += [power - 1, power, power + 1, power * 9 / 10 + 7]
            if power <= Int64.max / 10 { power *= 10 }
        }
        for n in numbers {
            var builder = HeadBuilder(fieldsCapacity: 8)
            builder.add("N", decimal: n)
            builder.addContentRange(n / 2..<n / 2 + 1, total: n)
            XCTAssertEqual(String(decoding: builder.bytes, as: UTF8.self),
                           "N: \(n)\r\nContent-Range: bytes \(n / 2)-\(n / 2)/\(n)\r\n", "\(n)")
        }
        var negative = HeadBuilder(fieldsCapacity: 8)
        negative.add("N", decimal: -5)
        XCTAssertEqual(String(decoding: negative.bytes, as: UTF8.self), "N: 0\r\n")
    }
}
