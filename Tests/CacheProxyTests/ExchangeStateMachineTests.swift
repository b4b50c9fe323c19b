import CacheHTTP
import CacheLoading
@testable import CacheProxy
import CacheStorage
import Foundation
import XCTest

final class ExchangeStateMachineTests: XCTestCase {
    typealias Machine = ExchangeStateMachine
    private var file: DataFile!
    private var path = ""

    override func setUpWithError() throws {
        path = NSTemporaryDirectory() + "exchange-sm-\(UInt64.random(in: 0...UInt64.max))"
        file = try DataFile(path: path)
    }

    override func tearDown() {
        file = nil
        unlink(path)
    }

    private func info(_ length: Int64?) -> ContentInfo {
        ContentInfo(totalLength: length, contentType: "video/mp4", etag: "\"v1\"", lastModified: nil)
    }

    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// A compact picture of actions for table-like assertions.
    private func describe(_ actions: [Machine.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .deliver(let range): return "deliver \(range.lowerBound)..<\(range.upperBound)"
            case .write(let bytes):
                let t = text(bytes)
                return t.hasPrefix("HTTP/1.1 ") ? "head " + String(t.prefix(12).dropFirst(9)) : "write \(t.debugDescription)"
            case .writeHead(let head, let body): return "head " + String(text(head).prefix(12).dropFirst(9)) + " + \(text(body).debugDescription)"
            case .sendFile(_, let range, let head): return "file \(range.lowerBound)..<\(range.upperBound)\(head == nil ? "" : " +head")"
            case .respondError(let error): return "error \(error)"
            case .finish(let keepAlive): return "finish \(keepAlive)"
            case .abort: return "abort"
            }
        }
    }

    func testWholeBodyIsZeroCopyWithTheHeadInTheFirstPiece() {
        var machine = Machine(request: BodyRequest())
        XCTAssertEqual(describe(machine.handle(.content(info(100), transformed: false, date: "d"))), ["deliver 0..<100"])
        XCTAssertEqual(describe(machine.handle(.file(file, 0..<60))), ["file 0..<60 +head"])
        XCTAssertEqual(describe(machine.handle(.file(file, 60..<100))), ["file 60..<100"])
        XCTAssertEqual(describe(machine.handle(.bodyEnded)), ["finish true"])
    }

    /// A head built with the stored-response lines rendered before (what a
    /// copy of a plain hit does) is byte for byte the head built whole.
    func testPrerenderedMiddleMakesTheSameHead() {
        var stored = HTTPHeaders()
        stored.add("Date", "Wed, 25 Nov 2026 10:00:00 GMT")
        stored.add("Cache-Control", "max-age=60")
        stored.add("X-Origin", "a")
        stored.add("Content-Length", "100")
        var plain = ContentInfo(totalLength: 100, contentType: nil, etag: nil,
                                lastModified: "Tue, 24 Nov 2026 10:00:00 GMT", headers: stored)
        var replayed = plain
        replayed.replayedLines = ResponsePlan.replayedLines(stored)
        replayed.age = 7
        plain.contentType = "video/mp4"
        let requests = [BodyRequest(), BodyRequest(range: .closed(first: 10, last: 19)),
                        BodyRequest(range: .closed(first: 200, last: 300)), BodyRequest(isHead: true),
                        BodyRequest(isHTTP10: true, keepAlive: false)]
        for stored in [info(100), info(nil), plain, replayed] {
            for request in requests {
                let plan = ResponsePlan(request, info: stored)
                let whole = text(plan.head(stored, date: "d"))
                XCTAssertEqual(text(plan.head(stored, date: "d", middle: ResponsePlan.middleLines(stored))), whole)
                var machine = Machine(request: request)
                let actions = machine.handle(.content(stored, transformed: false, date: "d", middle: ResponsePlan.middleLines(stored)))
                    + machine.handle(.file(file, plan.body.lowerBound..<min(plan.body.upperBound, 100)))
                let heads = actions.compactMap { action -> String? in
                    switch action {
                    case .write(let bytes): return text(bytes)
                    case .sendFile(_, _, let head?): return text(head)
                    default: return nil
                    }
                }
                XCTAssertEqual(heads.first, whole, "\(request)")
            }
        }
    }

    func testRangeIsPlannedAs206() {
        var machine = Machine(request: BodyRequest(range: .closed(first: 10, last: 19)))
        XCTAssertEqual(describe(machine.handle(.content(info(100), transformed: false, date: "d"))), ["deliver 10..<20"])
        guard case .sendFile(_, _, let head?) = machine.handle(.file(file, 10..<20)).first else { return XCTFail() }
        let t = text(head)
        XCTAssertTrue(t.hasPrefix("HTTP/1.1 206"))
        XCTAssertTrue(t.contains("Content-Range: bytes 10-19/100\r\n"))
        XCTAssertTrue(t.contains("Content-Length: 10\r\n"))
    }

    func testHeadAnd416AreAnsweredWithTheHeadOnly() {
        var head = Machine(request: BodyRequest(isHead: true))
        XCTAssertEqual(describe(head.handle(.content(info(100), transformed: false, date: "d"))), ["head 200", "finish true"])
        var unsatisfiable = Machine(request: BodyRequest(range: .from(first: 500)))
        XCTAssertEqual(describe(unsatisfiable.handle(.content(info(100), transformed: false, date: "d"))), ["head 416", "finish true"])
    }

    func testIfRangeMismatchGivesTheWholeBody() {
        var machine = Machine(request: BodyRequest(range: .closed(first: 0, last: 9), ifRange: "\"v0\""))
        XCTAssertEqual(describe(machine.handle(.content(info(100), transformed: false, date: "d"))), ["deliver 0..<100"])
    }

    func testUnknownLengthIsChunkedForHTTP11AndCloseDelimitedFor10() {
        var machine = Machine(request: BodyRequest())
        XCTAssertEqual(describe(machine.handle(.content(info(nil), transformed: false, date: "d"))), ["deliver 0..<\(Int64.max)"])
        XCTAssertEqual(describe(machine.handle(.file(file, 0..<26))),
                       ["head 200", "write \"1a\\r\\n\"", "file 0..<26", "write \"\\r\\n\""])
        XCTAssertEqual(describe(machine.handle(.bodyEnded)), ["write \"0\\r\\n\\r\\n\"", "finish true"])

        var old = Machine(request: BodyRequest(isHTTP10: true))
        _ = old.handle(.content(info(nil), transformed: false, date: "d"))
        XCTAssertEqual(describe(old.handle(.file(file, 0..<26))), ["file 0..<26 +head"])
        XCTAssertEqual(describe(old.handle(.bodyEnded)), ["finish false"], "the body ends with the connection")
    }

    func testFailureBeforeTheFirstByteIsACleanErrorResponse() {
        var machine = Machine(request: BodyRequest())
        _ = machine.handle(.content(info(100), transformed: false, date: "d"))
        XCTAssertEqual(describe(machine.handle(.failed(.mismatch("x")))), ["error x", "finish true"])
    }

    func testFailureMidBodyAborts() {
        var machine = Machine(request: BodyRequest())
        _ = machine.handle(.content(info(100), transformed: false, date: "d"))
        _ = machine.handle(.file(file, 0..<10))
        XCTAssertEqual(describe(machine.handle(.failed(.mismatch("x")))), ["abort"])
        XCTAssertEqual(describe(machine.handle(.bodyEnded)), [], "nothing after an abort")
    }

    func testOriginErrorBeforeContent() {
        var machine = Machine(request: BodyRequest(keepAlive: false))
        XCTAssertEqual(describe(machine.handle(.contentFailed(.mismatch("bad")))), ["error bad", "finish false"])
    }

    /// A transformed body (a rewritten playlist, say): no 304 from the
    /// stored validators, and the client's range applies to the output.
    func testTransformedContentIsPlannedOnTheOutput() {
        var request = BodyRequest(range: .from(first: 2))
        request.preconditions = HTTPHeaders([("If-None-Match", "\"v1\"")])
        var machine = Machine(request: request)
        var output = info(6)
        output.etag = nil
        XCTAssertEqual(describe(machine.handle(.content(output, transformed: true, date: "d"))), ["deliver 2..<6"])
        // A small first piece leaves with the head, in one send.
        let actions = machine.handle(.bytes(Array("bbcc".utf8)))
        guard case .writeHead(let head, let body)? = actions.first, actions.count == 1 else { return XCTFail() }
        XCTAssertTrue(text(head).contains("Content-Range: bytes 2-5/6\r\n"), text(head))
        XCTAssertEqual(text(body), "bbcc")
        XCTAssertEqual(describe(machine.handle(.bodyEnded)), ["finish true"])
    }

    func testClientPreconditionsAreAnsweredWithoutABody() {
        let info = ContentInfo(totalLength: 100, contentType: "video/mp4", etag: "\"v1\"", lastModified: nil,
                               headers: HTTPHeaders([("Cache-Control", "max-age=60"), ("Content-Encoding", "gzip")]))
        func answer(_ fields: [(String, String)]) -> String? {
            var request = BodyRequest()
            request.preconditions = HTTPHeaders(fields)
            var machine = ExchangeStateMachine(request: request)
            let actions = machine.handle(.content(info, transformed: false, date: "D"))
            guard case .write(let bytes)? = actions.first else { return nil }
            return String(decoding: bytes, as: UTF8.self)
        }
        let notModified = answer([("If-None-Match", "W/\"v1\"")]) ?? ""
        XCTAssertTrue(notModified.hasPrefix("HTTP/1.1 304 "), notModified)
        XCTAssertTrue(notModified.contains("ETag: \"v1\"\r\n"))
        XCTAssertTrue(notModified.contains("Cache-Control: max-age=60\r\n"))
        XCTAssertFalse(notModified.contains("Content-Length"), "no length of a body a 304 does not have")
        XCTAssertFalse(notModified.contains("Content-Encoding"))
        XCTAssertTrue(answer([("If-Match", "\"v2\"")])?.hasPrefix("HTTP/1.1 412 ") ?? false)
        // A mismatch plans the normal response: the machine asks for the body.
        var request = BodyRequest()
        request.preconditions = HTTPHeaders([("If-None-Match", "\"v2\"")])
        var machine = ExchangeStateMachine(request: request)
        guard case .deliver(let range)? = machine.handle(.content(info, transformed: false, date: "D")).first else {
            return XCTFail("expected a body")
        }
        XCTAssertEqual(range, 0..<100)
    }

    /// A stored status other than 200 (forward and reverse modes) is replayed
    /// whole: Range and the client's preconditions apply to a 200 only
    /// (RFC 9110 §14.2, §13.2.1); a 204 has neither body nor length.
    func testStoredOtherStatusesAreReplayedWholeWithTheirFields() {
        var stored = HTTPHeaders()
        stored.add("Location", "/elsewhere")
        var redirect = ContentInfo(totalLength: 4, contentType: "text/plain", etag: "\"v1\"", lastModified: nil,
                                   headers: stored)
        redirect.setServing(headers: stored, replayedLines: nil, age: 3, status: 301, ttl: 10)
        let ranged = BodyRequest(range: .closed(first: 1, last: 2))
        XCTAssertEqual(ResponsePlan(ranged, info: redirect).status, 301)
        XCTAssertEqual(ResponsePlan(ranged, info: redirect).body, 0..<4)
        var conditional = BodyRequest()
        conditional.preconditions = HTTPHeaders([("If-None-Match", "\"v1\"")])
        var machine = Machine(request: conditional)
        machine.cacheStatus = "c; hit"
        XCTAssertEqual(describe(machine.handle(.content(redirect, transformed: false, date: "d"))), ["deliver 0..<4"])
        let actions = machine.handle(.file(file, 0..<4))
        guard case .sendFile(_, _, let head?) = actions.first else { return XCTFail("\(describe(actions))") }
        let written = text(head)
        XCTAssertTrue(written.hasPrefix("HTTP/1.1 301 "), written)
        XCTAssertTrue(written.contains("\r\nLocation: /elsewhere\r\n"), written)
        XCTAssertTrue(written.contains("\r\nCache-Status: c; hit\r\n"), written)
        XCTAssertFalse(written.contains("Accept-Ranges"), written)

        var empty = ContentInfo(totalLength: 0, contentType: nil, etag: nil, lastModified: nil)
        empty.setServing(headers: HTTPHeaders(), replayedLines: nil, age: 0, status: 204)
        var bodiless = Machine(request: BodyRequest())
        let answered = bodiless.handle(.content(empty, transformed: false, date: "d"))
        XCTAssertEqual(describe(answered), ["head 204", "finish true"])
        if case .write(let bytes) = answered.first {
            XCTAssertFalse(text(bytes).contains("Content-Length"), text(bytes))
            XCTAssertFalse(text(bytes).contains("Content-Type"), text(bytes))
            XCTAssertFalse(text(bytes).contains("Transfer-Encoding"), text(bytes))
        }
    }
}
