import CacheHTTP
@testable import CacheProxy
import XCTest

/// Request bodies in the connection machine: collected (bounded) before the
/// request is handled, framed by Content-Length or chunked.
final class RequestBodyTests: XCTestCase {
    typealias Machine = ConnectionStateMachine

    private func machine(maxBody: Int = 1000) -> Machine {
        var settings = Machine.Settings(keepAliveTimeout: 60_000, headTimeout: 10_000, sendTimeout: 60_000)
        settings.maxRequestBody = maxBody
        var machine = Machine(settings: settings)
        _ = machine.handle(.started)
        return machine
    }

    /// Feeds bytes; a body the machine asks to admit is admitted (as the driver does for an allowed route).
    private func read(_ machine: inout Machine, _ text: String, admit: Bool = true) -> [Machine.Action] {
        var actions = Array(text.utf8).withUnsafeBytes { machine.handle(.bytesRead($0)) }
        if admit, actions.contains(where: { if case .admitBody = $0 { true } else { false } }) {
            actions += machine.handle(.bodyAdmitted)
        }
        return actions
    }

    private func bodies(_ actions: [Machine.Action]) -> [String] {
        actions.compactMap {
            if case .handleWithBody(let head, let body) = $0 { return head.method + " " + String(decoding: body, as: UTF8.self) }
            return nil
        }
    }

    func testContentLengthBodyAcrossReadsThenTheNextRequest() {
        var m = machine()
        XCTAssertEqual(bodies(read(&m, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello")), [])
        XCTAssertEqual(m.state, .readingBody)
        XCTAssertEqual(bodies(read(&m, " world")), ["POST hello world"])
        XCTAssertEqual(m.state, .responding(queued: nil))
        // A pipelined request right after a body is taken once the response is out.
        _ = read(&m, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        let next = m.handle(.responseQueued(keepAlive: true, drained: true))
        XCTAssertTrue(next.contains { if case .handle(let h) = $0 { return h.target == "/b" } else { return false } })
    }

    func testHeadAndBodyInOneRead() {
        var m = machine()
        XCTAssertEqual(bodies(read(&m, "PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")), ["PUT abc"])
    }

    func testChunkedBody() {
        var m = machine()
        let actions = read(&m, "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n wor")
        XCTAssertEqual(bodies(actions), [])
        XCTAssertEqual(bodies(read(&m, "ld\r\n0\r\n\r\n")), ["POST hello world"])
    }

    func testExpect100ContinueIsAnsweredBeforeTheBody() {
        var m = machine()
        let actions = read(&m, "POST /a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        XCTAssertTrue(actions.contains(.sendContinue))
        XCTAssertEqual(bodies(read(&m, "ok")), ["POST ok"])
        var old = machine()
        XCTAssertFalse(read(&old, "POST /a HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
            .contains(.sendContinue), "not to HTTP/1.0 clients")
    }

    func testNothingOfABodyIsReadBeforeItsRequestIsAdmitted() {
        var m = machine()
        let head = "POST /a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 8\r\n\r\n"
        let actions = read(&m, head + "abc", admit: false)
        XCTAssertTrue(actions.contains { if case .admitBody(let h) = $0 { h.target == "/a" } else { false } })
        XCTAssertFalse(actions.contains(.sendContinue), "100 Continue only once the request is admitted")
        XCTAssertEqual(m.state, .admittingBody)
        XCTAssertFalse(m.reading, "no byte of the body is read while the route is decided")
        // Refused: the request is handled (its refusal answered) unread, then the connection closes.
        let refused = m.handle(.bodyRefused)
        XCTAssertTrue(refused.contains { if case .handle(let h) = $0 { h.target == "/a" } else { false } })
        XCTAssertFalse(refused.contains(.sendContinue))
        XCTAssertEqual(m.unparsed, 0, "the body's bytes are dropped, never parsed as a request")
        let done = m.handle(.responseQueued(keepAlive: true, drained: true))
        XCTAssertTrue(done.contains(.closeAfterDrain), "\(done)")
        // Admitted: 100 Continue, then the body.
        var ok = machine()
        _ = read(&ok, head, admit: false)
        XCTAssertTrue(ok.handle(.bodyAdmitted).contains(.sendContinue))
        XCTAssertEqual(bodies(read(&ok, "abcdefgh")), ["POST abcdefgh"])
    }

    func testTransferCodingsOtherThanChunkedAndHTTP10AreRefused() {
        let cases: [(String, HeadParseError)] = [
            ("POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", .codingNotImplemented),
            ("POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
             .codingNotImplemented),
            ("POST /a HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
             .badRequest("Transfer-Encoding in an HTTP/1.0 request")),
        ]
        for (text, error) in cases {
            var m = machine()
            let actions = read(&m, text)
            XCTAssertTrue(actions.contains(.reject(error)), "\(text): \(actions)")
        }
        XCTAssertEqual(HeadParseError.codingNotImplemented.status, 501)
    }

    func testZeroLengthIsNoBody() {
        var m = machine()
        let actions = read(&m, "DELETE /a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        XCTAssertTrue(actions.contains { if case .handle(let h) = $0 { return h.method == "DELETE" } else { return false } })
    }

    func testRefusals() {
        let cases: [(String, HeadParseError)] = [
            ("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n", .contentTooLarge),
            ("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
             .badRequest("Transfer-Encoding with Content-Length")),   // the head parser's own refusal
            ("POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
             .badRequest("request transfer coding is not chunked")),
            ("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
             .badRequest("conflicting Content-Length")),
            ("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", .badRequest("invalid Content-Length")),
            ("POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", .badRequest("malformed chunked request body")),
        ]
        for (text, error) in cases {
            var m = machine()
            let actions = read(&m, text)
            XCTAssertTrue(actions.contains(.reject(error)), "\(text.replacingOccurrences(of: "\r\n", with: " | ")): \(actions)")
            XCTAssertEqual(m.state, .draining)
        }
        // A chunked body growing past the limit is refused as it arrives.
        var m = machine(maxBody: 8)
        let actions = read(&m, "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n123456789\r\n")
        XCTAssertTrue(actions.contains(.reject(.contentTooLarge)))
    }

    func testPeerClosingMidBodyCloses() {
        var m = machine()
        _ = read(&m, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        XCTAssertTrue(m.handle(.peerFinished).contains(.closeAfterDrain))
        XCTAssertEqual(m.state, .draining)
    }
}
