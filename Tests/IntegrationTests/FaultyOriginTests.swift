import Foundation
import XCTest

/// Origins that misbehave in ways nginx cannot be made to.
final class FaultyOriginTests: XCTestCase {
    private var origin: FaultyOrigin!

    override func setUpWithError() throws {
        origin = try FaultyOrigin()
    }

    override func tearDown() {
        origin?.stop()
        origin = nil
    }

    func testOriginClosingMidBodyCutsTheResponseAndTheRestIsFetchedLater() throws {
        let body = TestFile.randomBytes(count: 8_000_000, seed: 31)
        origin.serve("/cut.bin", body: body, fault: .closeMidBody(after: 6_000_000))
        let proxy = try TestProxy()

        // A client slower than the origin: the cut happens while bytes are still queued for it.
        let cut = try proxy.getUntilClose(origin.url("/cut.bin"), readDelay: 0.5)
        XCTAssertEqual(cut.status, 200)
        XCTAssertEqual(cut.contentLength, 8_000_000)
        // Every byte the origin sent reaches the client, and not one more.
        XCTAssertEqual(cut.body.count, 6_000_000)
        XCTAssertTrue(cut.body[...] == body[0..<6_000_000])
        XCTAssertTrue(proxy.waitForMetadata(line: "ranges 0-5999999"), "\(proxy.metadata())")

        origin.setFault("/cut.bin", .none)
        origin.clearLog()
        let whole = try proxy.get(origin.url("/cut.bin"))
        XCTAssertEqual(whole.status, 200)
        XCTAssertTrue(whole.body == body, "whole body after the cut")
        XCTAssertEqual(origin.requests(for: "/cut.bin").map(\.range), ["bytes=6000000-"])
    }

    func testOriginIgnoringRangeServesTheRightBytes() throws {
        let body = TestFile.randomBytes(count: 400_000, seed: 32)
        origin.serve("/whole.bin", body: body, fault: .ignoreRange)
        let proxy = try TestProxy()

        let first = try proxy.get(origin.url("/whole.bin"), range: "bytes=250000-250999")
        XCTAssertEqual(first.status, 206)
        XCTAssertEqual(first.header("Content-Range"), "bytes 250000-250999/400000")
        XCTAssertTrue(first.body[...] == body[250_000..<251_000])
        // The 200 body was cached from its start: an earlier range needs no origin request.
        let second = try proxy.get(origin.url("/whole.bin"), range: "bytes=1000-1999")
        XCTAssertEqual(second.status, 206)
        XCTAssertTrue(second.body[...] == body[1000..<2000])
        XCTAssertEqual(origin.requests(for: "/whole.bin").count, 1)
    }

    func testWrongContentRangeIs502AndNothingIsCached() throws {
        let body = TestFile.randomBytes(count: 100_000, seed: 33)
        origin.serve("/lie.bin", body: body, fault: .wrongContentRange(shift: 100))
        let proxy = try TestProxy()

        // First contact (the resource's length is not known yet).
        let probe = try proxy.get(origin.url("/lie.bin"), range: "bytes=1000-1999")
        XCTAssertEqual(probe.status, 502)
        XCTAssertTrue(probe.bodyString.contains("asked bytes=1000-1999"), probe.bodyString)

        origin.setFault("/lie.bin", .none)
        let good = try proxy.get(origin.url("/lie.bin"), range: "bytes=1000-1999")
        XCTAssertEqual(good.status, 206)
        XCTAssertTrue(good.body[...] == body[1000..<2000])

        // A later gap of a resource whose length is known.
        origin.setFault("/lie.bin", .wrongContentRange(shift: 7))
        let gap = try proxy.get(origin.url("/lie.bin"), range: "bytes=50000-59999")
        XCTAssertEqual(gap.status, 502)
        origin.setFault("/lie.bin", .none)
        origin.clearLog()
        let again = try proxy.get(origin.url("/lie.bin"), range: "bytes=50000-59999")
        XCTAssertTrue(again.body[...] == body[50_000..<60_000])
        XCTAssertEqual(origin.requests(for: "/lie.bin").map(\.range), ["bytes=50000-59999"],
                       "nothing of the rejected response was cached")
    }

    func testMoreBytesThanAnnouncedIs502AndNothingIsCached() throws {
        let body = TestFile.randomBytes(count: 10_000, seed: 34)
        origin.serve("/long.bin", body: body, fault: .extraBytes(100))
        let proxy = try TestProxy()

        let response = try proxy.get(origin.url("/long.bin"))
        XCTAssertEqual(response.status, 502)
        XCTAssertTrue(response.bodyString.contains("more body bytes than Content-Length"), response.bodyString)

        origin.setFault("/long.bin", .none)
        origin.clearLog()
        let good = try proxy.get(origin.url("/long.bin"))
        XCTAssertEqual(good.status, 200)
        XCTAssertTrue(good.body == body)
        XCTAssertEqual(origin.requests(for: "/long.bin").map(\.range), ["bytes=0-"])
    }

    func testChunkedBodyOfUnknownLengthStreamsAndIsCached() throws {
        let body = TestFile.randomBytes(count: 500_000, seed: 35)
        origin.serve("/live.bin", body: body, fault: .chunked(piece: 7_000))
        let proxy = try TestProxy()

        let first = try proxy.get(origin.url("/live.bin"))
        XCTAssertEqual(first.status, 200)
        XCTAssertNil(first.contentLength)
        XCTAssertTrue(first.wasChunked, "an HTTP/1.1 client gets an unknown length chunked")
        XCTAssertTrue(first.body == body)
        XCTAssertTrue(proxy.waitForMetadata(line: "length 500000"), "\(proxy.metadata())")

        let second = try proxy.get(origin.url("/live.bin"))
        XCTAssertEqual(second.contentLength, 500_000)
        XCTAssertTrue(second.body == body)
        let range = try proxy.get(origin.url("/live.bin"), range: "bytes=-1000")
        XCTAssertEqual(range.status, 206)
        XCTAssertTrue(range.body[...] == body[499_000...])
        XCTAssertEqual(origin.requests(for: "/live.bin").count, 1)
    }

    func testStallBeforeTheHeadIs504AndFreesTheConnection() throws {
        origin.serve("/stall.bin", body: [1, 2, 3], fault: .stallBeforeHead)
        let proxy = try TestProxy { $0.readTimeout = 1 }
        let started = Date()
        let response = try proxy.get(origin.url("/stall.bin"))
        XCTAssertEqual(response.status, 504)
        XCTAssertTrue(response.bodyString.contains("timed out"), response.bodyString)
        XCTAssertLessThan(Date().timeIntervalSince(started), 4)
        XCTAssertTrue(TestTools.waitUntil(timeout: 3) { origin.openConnections == 0 },
                      "the proxy closes the origin connection")
    }

    /// A pooled connection that times out is not retried on a fresh one: the
    /// client waits one read timeout, not two.
    func testReadTimeoutOnAReusedConnectionIs504AfterOneTimeout() throws {
        let body = TestFile.randomBytes(count: 10_000, seed: 37)
        origin.serve("/hang.bin", body: body, fault: .stallAfterFirstResponse)
        let proxy = try TestProxy { $0.readTimeout = 1 }

        let first = try proxy.get(origin.url("/hang.bin"), range: "bytes=0-999")
        XCTAssertEqual(first.status, 206, first.bodyString)
        XCTAssertTrue(first.body[...] == body[0..<1000])

        let started = Date()
        let second = try proxy.get(origin.url("/hang.bin"), range: "bytes=5000-5999")
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertEqual(second.status, 504, second.bodyString)
        XCTAssertTrue(second.bodyString.contains("timed out"), second.bodyString)
        XCTAssertGreaterThan(elapsed, 0.9)
        XCTAssertLessThan(elapsed, 1.8, "one read timeout (1 s), not two")

        let requests = origin.requests(for: "/hang.bin")
        XCTAssertEqual(requests.count, 2, "no retry: \(requests.map(\.range))")
        XCTAssertEqual(requests.map(\.connection), [1, 1], "the second request went on the kept-alive connection")
        XCTAssertEqual(origin.connectionsAccepted, 1)
        XCTAssertEqual(proxy.logs.lines(.debug, containing: "retrying").count, 0, "\(proxy.logs.messages)")
        XCTAssertTrue(TestTools.waitUntil(timeout: 3) { origin.openConnections == 0 },
                      "the proxy closes the connection that timed out")
    }

    func testStallMidBodyEndsTheResponseAfterTheReadTimeout() throws {
        let body = TestFile.randomBytes(count: 1_000_000, seed: 36)
        origin.serve("/slow.bin", body: body, fault: .stallMidBody(after: 100_000))
        let proxy = try TestProxy { $0.readTimeout = 1 }

        let started = Date()
        let cut = try proxy.getUntilClose(origin.url("/slow.bin"))
        XCTAssertLessThan(Date().timeIntervalSince(started), 4)
        XCTAssertEqual(cut.status, 200)
        XCTAssertEqual(cut.body.count, 100_000)
        XCTAssertTrue(cut.body[...] == body[0..<100_000])
        XCTAssertTrue(TestTools.waitUntil(timeout: 3) { origin.openConnections == 0 })
        XCTAssertTrue(proxy.waitForMetadata(line: "ranges 0-99999"), "\(proxy.metadata())")

        origin.setFault("/slow.bin", .none)
        origin.clearLog()
        let rest = try proxy.get(origin.url("/slow.bin"), range: "bytes=50000-")
        XCTAssertTrue(rest.body[...] == body[50_000...])
        XCTAssertEqual(origin.requests(for: "/slow.bin").map(\.range), ["bytes=100000-"])
    }
}
