import CacheHTTP
@testable import CacheUpstream
import XCTest

/// The upstream connection as a value: events in, actions out, no sockets.
final class UpstreamConnectionStateMachineTests: XCTestCase {
    // MARK: bodies

    func testContentLengthInOneRead() {
        var c = Harness.ready()
        XCTAssertEqual(c.read("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"),
                       [.arm(.read), .head(200), .body("hello"), .arm(.idle), .complete(reusable: true)])
        XCTAssertTrue(c.machine.isIdle)
    }

    func testContentLengthByteAtATime() {
        var c = Harness.ready()
        let steps = c.readByteAtATime("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world")
        XCTAssertEqual(steps.filter { $0 != .arm(.read) }.filter { if case .body = $0 { false } else { true } },
                       [.head(200), .arm(.idle), .complete(reusable: true)])
        XCTAssertEqual(Harness.body(of: steps), "hello world")
        XCTAssertEqual(steps.last, .complete(reusable: true))
    }

    func testHeadAndBodySplitAnywhere() {
        let response = "HTTP/1.1 206 Partial Content\r\nContent-Length: 6\r\n\r\nabcdef"
        for cut in 1..<response.utf8.count {
            var c = Harness.ready()
            let bytes = Array(response.utf8)
            let steps = c.read(bytes[..<cut]) + c.read(bytes[cut...])
            XCTAssertEqual(steps.filter { $0 == .head(206) }.count, 1, "cut at \(cut)")
            XCTAssertEqual(Harness.body(of: steps), "abcdef", "cut at \(cut)")
            XCTAssertEqual(steps.last, .complete(reusable: true), "cut at \(cut)")
        }
    }

    func testConnectionIsReusedAfterACompletedExchange() {
        var c = Harness.ready()
        _ = c.read("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na")
        XCTAssertEqual(c.start(), [.write("GET /"), .startReading, .arm(.read)])
        XCTAssertEqual(c.read("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"),
                       [.arm(.read), .head(200), .body("b"), .arm(.idle), .complete(reusable: true)])
    }

    func testConnectionCloseIsNotReused() {
        var c = Harness.ready()
        XCTAssertEqual(c.read("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\na"),
                       [.arm(.read), .head(200), .body("a"), .close, .complete(reusable: false)])
        XCTAssertTrue(c.machine.isClosed)
    }

    func testChunkedBody() {
        let response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
        var c = Harness.ready()
        XCTAssertEqual(c.read(response), [.arm(.read), .head(200), .body("hello"), .body(" world"),
                                          .arm(.idle), .complete(reusable: true)])
        var d = Harness.ready()
        let steps = d.readByteAtATime(response)
        XCTAssertEqual(Harness.body(of: steps), "hello world")
        XCTAssertEqual(steps.last, .complete(reusable: true))
    }

    func testBodyUntilCloseEndsAtEOF() {
        var c = Harness.ready()
        XCTAssertEqual(c.read("HTTP/1.1 200 OK\r\n\r\nabc"), [.arm(.read), .head(200), .body("abc")])
        XCTAssertEqual(c.read("def"), [.arm(.read), .body("def")])
        XCTAssertEqual(c.eof(), [.close, .complete(reusable: false)])
    }

    func testInterimResponsesAreReportedThenTheFinalOne() {
        var c = Harness.ready()
        XCTAssertEqual(c.read("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
                       [.arm(.read), .interim(100), .head(200), .body("ok"), .arm(.idle), .complete(reusable: true)])
        // Split: the 1xx alone, then half the final head.
        var d = Harness.ready()
        XCTAssertEqual(d.read("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 2"), [.arm(.read), .interim(103)])
        XCTAssertEqual(d.read("00 OK\r\nContent-Length: 2\r\n\r\nok"),
                       [.arm(.read), .head(200), .body("ok"), .arm(.idle), .complete(reusable: true)])
    }

    func testPartialInterimHeadThenTheFinalOneInTheSameRead() {
        var c = Harness.ready()
        XCTAssertEqual(c.read("HTTP/1.1 100 Con"), [.arm(.read)])
        XCTAssertEqual(c.read("tinue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
                       [.arm(.read), .interim(100), .head(200), .body("ok"), .arm(.idle), .complete(reusable: true)])
    }

    func testHTTP10ResponseIsNotReused() {
        var c = Harness.ready()
        XCTAssertEqual(c.read("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\na"),
                       [.arm(.read), .head(200), .body("a"), .close, .complete(reusable: false)])
    }

    func testUntilCloseBodyMayBeEmpty() {
        var c = Harness.ready()
        XCTAssertEqual(c.read("HTTP/1.1 200 OK\r\n\r\n"), [.arm(.read), .head(200)])
        XCTAssertEqual(c.eof(), [.close, .complete(reusable: false)])
    }

    func testBodylessResponses() {
        var head = Harness.ready(method: "HEAD")
        XCTAssertEqual(head.read("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"),
                       [.arm(.read), .head(200), .arm(.idle), .complete(reusable: true)])
        for status in [204, 304] {
            var c = Harness.ready()
            XCTAssertEqual(c.read("HTTP/1.1 \(status) X\r\nContent-Length: 100\r\n\r\n"),
                           [.arm(.read), .head(status), .arm(.idle), .complete(reusable: true)])
        }
        var zero = Harness.ready()
        XCTAssertEqual(zero.read("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
                       [.arm(.read), .head(200), .arm(.idle), .complete(reusable: true)])
    }

    func testBytesAfterABodylessResponseAreAViolation() {
        var c = Harness.ready()
        XCTAssertEqual(c.read("HTTP/1.1 204 No Content\r\n\r\nxyz"),
                       [.arm(.read), .head(204), .close, .failed(.protocolViolation, retryable: false)])
    }

    func testRedirectBodiesAreSkippedNotDelivered() {
        var c = Harness.ready()
        c.deliversBody = false
        XCTAssertEqual(c.read("HTTP/1.1 302 Found\r\nLocation: /b\r\nContent-Length: 4\r\n\r\nmo"),
                       [.arm(.read), .head(302), .skip(2)])
        XCTAssertEqual(c.read("ve"), [.arm(.read), .skip(2), .arm(.idle), .complete(reusable: true)])
    }

    // MARK: faults

    func testOverrunIsAViolationBeforeAnyByteIsDelivered() {
        var c = Harness.ready()
        XCTAssertEqual(c.read("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcd"),
                       [.arm(.read), .head(200), .close, .failed(.protocolViolation, retryable: false)])
        XCTAssertTrue(c.lastError.contains("more body bytes than Content-Length"), c.lastError)
        // Over two reads: the second one is refused whole.
        var d = Harness.ready()
        _ = d.read("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nab")
        XCTAssertEqual(d.read("cd"), [.arm(.read), .close, .failed(.protocolViolation, retryable: false)])
    }

    func testBytesAfterTheLastChunkAreAViolation() {
        var c = Harness.ready()
        XCTAssertEqual(c.read("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\nextra"),
                       [.arm(.read), .head(200), .body("ok"), .close, .failed(.protocolViolation, retryable: false)])
        XCTAssertTrue(c.lastError.contains("bytes after the last chunk"), c.lastError)
    }

    func testBadHeadAndBadChunkAreViolations() {
        var c = Harness.ready()
        XCTAssertEqual(c.read("garbage\r\n\r\n"), [.arm(.read), .close, .failed(.protocolViolation, retryable: false)])
        var d = Harness.ready()
        XCTAssertEqual(d.read("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
                       [.arm(.read), .head(200), .close, .failed(.protocolViolation, retryable: false)])
    }

    func testOriginClosingMidBodyIsClosedEarly() {
        var c = Harness.ready()
        _ = c.read("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        XCTAssertEqual(c.eof(), [.close, .failed(.closedEarly, retryable: false)])
        XCTAssertTrue(c.lastError.contains("mid-body"), c.lastError)
        // A reset instead of a FIN: the stream closes with an error.
        var d = Harness.reused()
        _ = d.read("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        XCTAssertEqual(d.closed(.closedEarly("reset")), [.close, .failed(.closedEarly, retryable: false)])
    }

    func testReusedConnectionClosedBeforeAnyByteIsRetryable() {
        var c = Harness.reused()
        XCTAssertEqual(c.eof(), [.close, .failed(.closedEarly, retryable: true)])
        XCTAssertEqual(c.closed(nil), [], "the close that follows reports nothing twice")
        var d = Harness.reused()
        XCTAssertEqual(d.closed(.closedEarly("reset")), [.close, .failed(.closedEarly, retryable: true)])
    }

    func testFreshConnectionOrPartialHeadIsNotRetryable() {
        var fresh = Harness.ready()
        XCTAssertEqual(fresh.eof(), [.close, .failed(.closedEarly, retryable: false)])
        var partial = Harness.reused()
        _ = partial.read("HTTP/1.1 2")
        XCTAssertEqual(partial.eof(), [.close, .failed(.closedEarly, retryable: false)])
    }

    func testReadTimeoutOnAReusedConnectionIsNotRetryable() {
        var c = Harness.reused()
        XCTAssertEqual(c.timerFired(), [.close, .failed(.timeout, retryable: false)])
        var d = Harness.ready()
        _ = d.read("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        XCTAssertEqual(d.timerFired(), [.close, .failed(.timeout, retryable: false)])
    }

    func testConnectPhase() {
        var c = Harness()
        XCTAssertEqual(c.connect(), [.arm(.connect)])
        XCTAssertEqual(c.timerFired(), [.close, .connectFailed(.timeout)])
        var d = Harness()
        _ = d.connect()
        XCTAssertEqual(d.connected(.connect("refused")), [.close, .connectFailed(.connect)])
        var e = Harness()
        _ = e.connect()
        XCTAssertEqual(e.abandon(), [.close])
        XCTAssertEqual(e.connected(nil), [], "a connection abandoned while connecting stays closed")
    }

    // MARK: flow control and lifetime

    func testPausedTimersRearmInsteadOfFailing() {
        var c = Harness.ready()
        _ = c.read("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nabc")
        XCTAssertEqual(c.pause(), [.pauseReading])
        XCTAssertEqual(c.pause(), [], "pausing twice does nothing")
        XCTAssertEqual(c.timerFired(), [.arm(.read)])
        XCTAssertEqual(c.resume(), [.arm(.read), .resumeReading])
        XCTAssertEqual(c.resume(), [])
        XCTAssertEqual(c.timerFired(), [.close, .failed(.timeout, retryable: false)])
    }

    func testCompletingWhilePausedResumesReading() {
        var c = Harness.ready()
        _ = c.read("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nabc")
        _ = c.pause()
        XCTAssertEqual(c.read("def"), [.arm(.read), .body("def"), .resumeReading, .arm(.idle),
                                       .complete(reusable: true)])
        XCTAssertEqual(c.resume(), [], "an idle connection is not paused")
        XCTAssertEqual(c.pause(), [])
    }

    func testAbandonAtTheLastByteKeepsTheConnectionReusable() {
        var c = Harness.ready()
        _ = c.read("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")
        XCTAssertEqual(c.abandon(), [])
        XCTAssertTrue(c.machine.isIdle)
        XCTAssertEqual(c.start(), [.write("GET /"), .startReading, .arm(.read)])
    }

    func testAbandonMidBodyCloses() {
        var c = Harness.ready()
        _ = c.read("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nabc")
        XCTAssertEqual(c.abandon(), [.close])
        XCTAssertEqual(c.read("def"), [], "nothing more after the close")
        XCTAssertEqual(c.closed(nil), [])
    }

    func testIdleConnection() {
        var c = Harness.ready()
        _ = c.read("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na")
        XCTAssertEqual(c.read("junk"), [.close], "bytes on an idle connection close it")
        XCTAssertEqual(c.start(), [.failed(.closedEarly, retryable: true)], "a closed pooled connection sends nothing")
        var d = Harness.reused()
        _ = d.read("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na")
        XCTAssertEqual(d.timerFired(), [.close], "idle timeout")
        var e = Harness.reused()
        _ = e.read("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na")
        XCTAssertEqual(e.eof(), [.close], "the origin closing an idle connection is no failure")
        XCTAssertEqual(e.closed(nil), [])
    }

    func testCloseTellsNoOne() {
        var c = Harness.ready()
        XCTAssertEqual(c.close(), [.close])
        XCTAssertEqual(c.closed(nil), [])
        XCTAssertEqual(c.timerFired(), [])
    }
}

/// What the tests compare: actions with body ranges resolved to their bytes
/// and errors reduced to their kind.
private enum Step: Equatable {
    enum ErrorKind { case resolve, connect, timeout, protocolViolation, closedEarly, tls, redirect, configuration, forbidden }

    case write(String), startReading, pauseReading, resumeReading
    case arm(UpstreamConnectionStateMachine.Timer)
    case head(Int), body(String), skip(Int), interim(Int)
    case complete(reusable: Bool)
    case connectFailed(ErrorKind)
    case failed(ErrorKind, retryable: Bool)
    case close

    static func kind(_ error: UpstreamError) -> ErrorKind {
        switch error {
        case .resolve: .resolve
        case .connect: .connect
        case .timeout: .timeout
        case .protocolViolation: .protocolViolation
        case .closedEarly: .closedEarly
        case .tls: .tls
        case .redirect: .redirect
        case .configuration: .configuration
        case .forbidden: .forbidden
        }
    }
}

/// Drives the machine the way `UpstreamConnection` does, without sockets.
private struct Harness {
    var machine = UpstreamConnectionStateMachine(label: "origin.test", connectTimeout: 1000, readTimeout: 2000)
    /// The task's verdict on each head: deliver the body, or skip it.
    var deliversBody = true
    var lastError = ""
    private var method = "GET"
    private var actions: [UpstreamConnectionStateMachine.Action] = []

    /// Connected, first request sent.
    static func ready(method: String = "GET") -> Harness {
        var harness = Harness()
        harness.method = method
        _ = harness.connect()
        _ = harness.connected(nil)
        return harness
    }

    /// A second request on a connection that completed one.
    static func reused() -> Harness {
        var harness = ready()
        _ = harness.read("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na")
        _ = harness.start()
        return harness
    }

    static func body(of steps: [Step]) -> String {
        steps.map { if case .body(let text) = $0 { text } else { "" } }.joined()
    }

    mutating func connect() -> [Step] {
        machine.connect(request: Array("\(method) /".utf8), method: method, into: &actions)
        return take(nil)
    }

    mutating func connected(_ error: UpstreamError?) -> [Step] {
        machine.connected(error: error, into: &actions)
        return take(nil)
    }

    mutating func start() -> [Step] {
        machine.start(request: Array("\(method) /".utf8), method: method, into: &actions)
        return take(nil)
    }

    mutating func read(_ text: String) -> [Step] { read(Array(text.utf8)[...]) }

    /// Feeds one read like the driver: after a head, its verdict, then the rest.
    mutating func read(_ bytes: ArraySlice<UInt8>) -> [Step] {
        var steps: [Step] = []
        Array(bytes).withUnsafeBytes { all in
            var rest = all
            while true {
                let consumed = machine.bytesRead(rest, into: &actions)
                let new = take(rest)
                steps += new
                if new.contains(where: { if case .head = $0 { true } else { false } }) {
                    machine.headAccepted(deliversBody: deliversBody, into: &actions)
                    steps += take(nil)
                }
                guard consumed > 0, consumed < rest.count else { return }
                rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
            }
        }
        return steps
    }

    mutating func readByteAtATime(_ text: String) -> [Step] {
        Array(text.utf8).flatMap { read([$0][...]) }
    }

    mutating func eof() -> [Step] {
        machine.eof(into: &actions)
        return take(nil)
    }

    mutating func timerFired() -> [Step] {
        machine.timerFired(into: &actions)
        return take(nil)
    }

    mutating func pause() -> [Step] {
        machine.pause(into: &actions)
        return take(nil)
    }

    mutating func resume() -> [Step] {
        machine.resume(into: &actions)
        return take(nil)
    }

    mutating func abandon() -> [Step] {
        machine.abandon(into: &actions)
        return take(nil)
    }

    mutating func close() -> [Step] {
        machine.close(into: &actions)
        return take(nil)
    }

    mutating func closed(_ error: UpstreamError?) -> [Step] {
        machine.closed(error: error, into: &actions)
        return take(nil)
    }

    private mutating func take(_ input: UnsafeRawBufferPointer?) -> [Step] {
        defer { actions.removeAll() }
        return actions.map { action -> Step in
            switch action {
            case .write(let bytes): return .write(String(decoding: bytes, as: UTF8.self))
            case .startReading: return .startReading
            case .pauseReading: return .pauseReading
            case .resumeReading: return .resumeReading
            case .armTimer(let timer): return .arm(timer)
            case .deliverInterim(let head): return .interim(head.status)
            case .deliverHead(let head): return .head(head.status)
            case .deliverBody(let range): return .body(String(decoding: input![range], as: UTF8.self))
            case .skipBody(let count): return .skip(count)
            case .complete(let reusable): return .complete(reusable: reusable)
            case .connectFailed(let error):
                lastError = error.description
                return .connectFailed(Step.kind(error))
            case .exchangeFailed(let error, let retryable):
                lastError = error.description
                return .failed(Step.kind(error), retryable: retryable)
            case .close: return .close
            }
        }
    }
}
