import CacheHTTP
@testable import CacheProxy
import XCTest

final class ConnectionStateMachineTests: XCTestCase {
    typealias Machine = ConnectionStateMachine

    private func settings(maxBuffered: Int = 64 << 10) -> Machine.Settings {
        var s = Machine.Settings(keepAliveTimeout: 60_000, headTimeout: 10_000, sendTimeout: 60_000)
        s.keepAliveTimeout = 1000
        s.headTimeout = 500
        s.sendTimeout = 800  // ticks every 100 ms
        s.maxBuffered = maxBuffered
        return s
    }

    private func read(_ machine: inout Machine, _ text: String) -> [Machine.Action] {
        Array(text.utf8).withUnsafeBytes { machine.handle(.bytesRead($0)) }
    }

    private func handled(_ actions: [Machine.Action]) -> [String] {
        actions.compactMap { if case .handle(let head) = $0 { return head.target } else { return nil } }
    }

    func testStartArmsKeepAliveAndReads() {
        var machine = Machine(settings: settings())
        XCTAssertEqual(machine.handle(.started), [.setTimer(milliseconds: 1000), .startReading])
    }

    func testOneRequestThenKeepAlive() {
        var machine = Machine(settings: settings())
        _ = machine.handle(.started)
        let actions = read(&machine, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(handled(actions), ["/a"])
        XCTAssertTrue(actions.contains(.setTimer(milliseconds: 100)), "the send timer replaces the idle timer")
        XCTAssertEqual(machine.state, .responding(queued: nil))
        XCTAssertEqual(machine.handle(.responseQueued(keepAlive: true, drained: false)), [], "waits for the socket")
        XCTAssertEqual(machine.handle(.socketDrained), [.endResponse, .setTimer(milliseconds: 1000)])
        XCTAssertEqual(machine.state, .awaitingHead)
    }

    func testNotKeepAliveDrainsAndCloses() {
        var machine = Machine(settings: settings())
        _ = machine.handle(.started)
        _ = read(&machine, "GET /a HTTP/1.1\r\nConnection: close\r\n\r\n")
        let actions = machine.handle(.responseQueued(keepAlive: false, drained: true))
        XCTAssertEqual(actions.first, .endResponse)
        XCTAssertTrue(actions.contains(.closeAfterDrain))
        XCTAssertTrue(actions.contains(.stopReading))
        XCTAssertEqual(machine.state, .draining)
    }

    func testPipelinedRequestsAreTakenOneAtATime() {
        var machine = Machine(settings: settings())
        _ = machine.handle(.started)
        let three = (1...3).map { "GET /\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined()
        XCTAssertEqual(handled(read(&machine, three)), ["/1"])
        XCTAssertEqual(handled(machine.handle(.responseQueued(keepAlive: true, drained: true))), ["/2"])
        XCTAssertEqual(handled(machine.handle(.responseQueued(keepAlive: true, drained: true))), ["/3"])
        let last = machine.handle(.responseQueued(keepAlive: true, drained: true))
        XCTAssertEqual(handled(last), [])
        XCTAssertTrue(last.contains(.setTimer(milliseconds: 1000)))
        XCTAssertEqual(machine.unparsed, 0)
    }

    /// The regression behind a stack overflow: 20,000 pipelined requests are
    /// all handled, one per completed response, with a bounded buffer.
    func testTwentyThousandPipelinedRequests() {
        var machine = Machine(settings: settings(maxBuffered: 8 << 10))
        _ = machine.handle(.started)
        let request = Array("GET /ping HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        var toSend = 20_000
        var handledCount = 0
        var reading = true
        var maxBuffered = 0
        func consider(_ actions: [Machine.Action]) {
            for action in actions {
                switch action {
                case .handle: handledCount += 1
                case .stopReading: reading = false
                case .startReading: reading = true
                default: break
                }
            }
        }
        while handledCount < 20_000 {
            // The client sends while the proxy reads, 4 KiB at a time.
            while reading && toSend > 0 {
                let n = min(toSend, 4096 / request.count)
                toSend -= n
                let chunk = Array([[UInt8]](repeating: request, count: n).joined())
                consider(chunk.withUnsafeBytes { machine.handle(.bytesRead($0)) })
                maxBuffered = max(maxBuffered, machine.unparsed)
            }
            let before = handledCount
            consider(machine.handle(.responseQueued(keepAlive: true, drained: true)))
            if handledCount == before && !reading && toSend > 0 { XCTFail("stalled"); return }
            if handledCount == before && toSend == 0 { break }
        }
        XCTAssertEqual(handledCount, 20_000)
        XCTAssertLessThan(maxBuffered, 8 << 10 + 4096)
    }

    /// The regression behind a stall: with a response in flight, a full buffer
    /// stops reading and taking a request from it resumes reading.
    func testFullBufferPausesAndResumesReading() {
        var machine = Machine(settings: settings(maxBuffered: 1024))
        _ = machine.handle(.started)
        _ = read(&machine, "GET /slow HTTP/1.1\r\n\r\n")
        let many = String(repeating: "GET /ping HTTP/1.1\r\n\r\n", count: 100)
        let actions = read(&machine, many)
        XCTAssertTrue(actions.contains(.stopReading))
        XCTAssertFalse(machine.reading)
        var resumed = false
        for _ in 0..<100 where !resumed {
            resumed = machine.handle(.responseQueued(keepAlive: true, drained: true)).contains(.startReading)
        }
        XCTAssertTrue(resumed, "reading resumes once the buffer has room")
    }

    func testPartialHeadUsesHeadTimeoutNotResetByMoreBytes() {
        var machine = Machine(settings: settings())
        _ = machine.handle(.started)
        XCTAssertEqual(read(&machine, "GET /a HT"), [.setTimer(milliseconds: 500)])
        XCTAssertEqual(read(&machine, "TP/1.1\r\nHost"), [], "more bytes do not restart the head timer")
        XCTAssertEqual(machine.handle(.timerFired(idle)), [.setTimer(milliseconds: nil), .closeNow])
        XCTAssertEqual(machine.state, .closed)
    }

    private let idle = Machine.SendProgress(bytesSent: 0, queued: 0)

    func testWaitingForTheOriginNeverTimesOut() {
        var machine = Machine(settings: settings())
        _ = machine.handle(.started)
        _ = read(&machine, "GET /a HTTP/1.1\r\n\r\n")
        for _ in 0..<100 {
            XCTAssertEqual(machine.handle(.timerFired(idle)), [.setTimer(milliseconds: 100)], "nothing queued: not the client's fault")
        }
        XCTAssertEqual(machine.state, .responding(queued: nil))
    }

    func testClientThatAcceptsNothingIsClosedAfterTheSendTimeout() {
        var machine = Machine(settings: settings())
        _ = machine.handle(.started)
        _ = read(&machine, "GET /a HTTP/1.1\r\n\r\n")
        let stuck = Machine.SendProgress(bytesSent: 4096, queued: 1 << 20)
        var ticks = 0
        while machine.state != .closed && ticks < 100 {
            ticks += 1
            _ = machine.handle(.timerFired(stuck))
        }
        XCTAssertEqual(machine.state, .closed)
        XCTAssertEqual(ticks, 8, "8 ticks of 100 ms: the 800 ms send timeout")
        XCTAssertTrue(machine.sendTimedOut)
    }

    func testSlowButSteadyReaderIsNotClosed() {
        var machine = Machine(settings: settings())
        _ = machine.handle(.started)
        _ = read(&machine, "GET /a HTTP/1.1\r\n\r\n")
        _ = machine.handle(.responseQueued(keepAlive: true, drained: false))
        for tick in 0..<50 {
            // One byte every third tick: slow, never stalled for the whole timeout.
            let progress = Machine.SendProgress(bytesSent: UInt64(tick / 3), queued: 1 << 20)
            XCTAssertEqual(machine.handle(.timerFired(progress)), [.setTimer(milliseconds: 100)])
        }
        XCTAssertEqual(machine.state, .responding(queued: true))
        XCTAssertFalse(machine.sendTimedOut)
    }

    func testDrainingClientThatStopsReadingIsClosed() {
        var machine = Machine(settings: settings())
        _ = machine.handle(.started)
        _ = read(&machine, "GET /a HTTP/1.1\r\n\r\n")
        _ = machine.handle(.responseAborted)  // what is queued still goes out, if the client reads
        XCTAssertEqual(machine.state, .draining)
        var last: [Machine.Action] = []
        for _ in 0..<9 { last = machine.handle(.timerFired(.init(bytesSent: 10, queued: 100))) }
        XCTAssertEqual(last, [])
        XCTAssertEqual(machine.state, .closed)
    }

    func testMalformedHeadIsRejectedAndCloses() {
        var machine = Machine(settings: settings())
        _ = machine.handle(.started)
        let actions = read(&machine, "GET /a HTTP/9.9\r\n\r\n")
        XCTAssertEqual(actions.first, .reject(.versionNotSupported))
        XCTAssertEqual(machine.state, .draining)
        XCTAssertEqual(read(&machine, "GET /b HTTP/1.1\r\n\r\n"), [], "nothing more is read")
    }

    func testEOFWhileIdleCloses() {
        var machine = Machine(settings: settings())
        _ = machine.handle(.started)
        let actions = machine.handle(.peerFinished)
        XCTAssertTrue(actions.contains(.closeAfterDrain))
    }

    func testEOFAfterPipelinedRequestsAnswersThemFirst() {
        var machine = Machine(settings: settings())
        _ = machine.handle(.started)
        _ = read(&machine, "GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\n")
        XCTAssertFalse(machine.handle(.peerFinished).contains(.closeAfterDrain))
        XCTAssertEqual(handled(machine.handle(.responseQueued(keepAlive: true, drained: true))), ["/2"])
        XCTAssertTrue(machine.handle(.responseQueued(keepAlive: true, drained: true)).contains(.closeAfterDrain))
    }

    func testEOFWithHalfAHeadCloses() {
        var machine = Machine(settings: settings())
        _ = machine.handle(.started)
        _ = read(&machine, "GET /1 HTTP/1.1\r\nHo")
        XCTAssertTrue(machine.handle(.peerFinished).contains(.closeAfterDrain))
    }

    func testAbortMidBodyClosesAfterDrain() {
        var machine = Machine(settings: settings())
        _ = machine.handle(.started)
        _ = read(&machine, "GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\n")
        let actions = machine.handle(.responseAborted)
        XCTAssertEqual(Array(actions.prefix(2)), [.endResponse, .closeAfterDrain])
        XCTAssertEqual(machine.handle(.socketDrained), [], "the pipelined request is never started")
    }

    func testSocketClosedEndsEverything() {
        var machine = Machine(settings: settings())
        _ = machine.handle(.started)
        _ = read(&machine, "GET /1 HTTP/1.1\r\n\r\n")
        XCTAssertEqual(machine.handle(.socketClosed), [.setTimer(milliseconds: nil)], "the send timer goes with the socket")
        XCTAssertEqual(machine.state, .closed)
        XCTAssertEqual(machine.handle(.responseQueued(keepAlive: true, drained: true)), [])
        XCTAssertEqual(machine.handle(.timerFired(idle)), [])
    }
}
