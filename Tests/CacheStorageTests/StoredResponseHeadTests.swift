import CacheHTTP
import XCTest
@testable import CacheStorage

final class StoredResponseHeadTests: XCTestCase {
    private func metadata(head: StoredResponseHead?) -> ResourceMetadata {
        var m = ResourceMetadata(url: "http://h/v.mp4", totalLength: 10, contentType: "video/mp4",
                                 etag: "\"e\"", ranges: RangeSet([0..<10]), lastAccess: 5)
        m.head = head
        return m
    }

    func testHeadRoundTripsWithFieldOrderDuplicatesAndVaryKey() throws {
        let headers = HTTPHeaders([("Cache-Control", "max-age=60"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"),
                                   ("Vary", "Accept-Language, Accept-Encoding"), ("X-Empty", ""),
                                   ("Link", "<http://x/y>; rel=\"next\"")])
        let key = VaryKey(entries: [.init(name: "accept-encoding", value: nil),
                                    .init(name: "accept-language", value: "fr: ca,en")])
        var head = StoredResponseHead(status: 203, headers: headers, requestTime: 100, responseTime: 101, varyKey: key)
        head.invalidated = true
        let decoded = try XCTUnwrap(ResourceMetadata(decoding: metadata(head: head).encoded()))
        XCTAssertEqual(decoded.head, head)
        XCTAssertEqual(decoded, metadata(head: head))
    }

    func testEmptyVaryKeyIsKeptApartFromNone() throws {
        let withEmpty = StoredResponseHead(status: 200, headers: HTTPHeaders(), requestTime: 1, responseTime: 1,
                                           varyKey: VaryKey(entries: []))
        XCTAssertEqual(ResourceMetadata(decoding: metadata(head: withEmpty).encoded())?.head?.varyKey,
                       VaryKey(entries: []))
        let without = StoredResponseHead(status: 200, headers: HTTPHeaders(), requestTime: 1, responseTime: 1, varyKey: nil)
        XCTAssertEqual(ResourceMetadata(decoding: metadata(head: without).encoded())?.head, without)
    }

    func testMetadataWrittenBeforeHeadsLoadsWithoutAHead() throws {
        let old = "httpcache-meta 1\nurl http://h/a\nlength 10\nranges 0-9\naccess 7\n"
        let decoded = try XCTUnwrap(ResourceMetadata(decoding: old))
        XCTAssertNil(decoded.head)
        XCTAssertEqual(decoded.totalLength, 10)
    }

    func testMalformedHeadLinesRefuseTheFile() {
        let base = "httpcache-meta 1\nurl http://h/a\nranges \naccess 7\n"
        XCTAssertNotNil(ResourceMetadata(decoding: base + "status 200\n"))
        XCTAssertNil(ResourceMetadata(decoding: base + "status 2000\n"))
        XCTAssertNil(ResourceMetadata(decoding: base + "status 200\nheader no-colon\n"))
        XCTAssertNil(ResourceMetadata(decoding: base + "status 200\nresponse-time soon\n"))
        // Head lines without a status are not a head.
        XCTAssertNil(ResourceMetadata(decoding: base + "header A: b\n"))
    }
}
