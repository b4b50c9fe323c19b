import CacheHTTP
import XCTest
@testable import CacheProxy

/// The CONNECT relay's rules, without sockets.
final class TunnelStateMachineTests: XCTestCase {
    func testConnectsRelaysWithBackpressureBothWaysAndClosesAfterTheOtherSide() {
        var machine = TunnelStateMachine(highWater: 100, idleTimeout: 1000)
        XCTAssertEqual(machine.connected(), [.established, .startReading(.client), .startReading(.origin),
                                             .setTimer(milliseconds: 1000)])
        XCTAssertEqual(machine.relayed(from: .client, queued: 100), [], "at the mark: still read")
        XCTAssertEqual(machine.relayed(from: .client, queued: 101), [.stopReading(.client)])
        XCTAssertEqual(machine.relayed(from: .client, queued: 500), [], "paused once")
        XCTAssertEqual(machine.drained(.client), [], "the client's queue says nothing of the origin's")
        XCTAssertEqual(machine.drained(.origin), [.startReading(.client)])
        XCTAssertEqual(machine.relayed(from: .origin, queued: 1 << 20), [.stopReading(.origin)])
        XCTAssertEqual(machine.drained(.client), [.startReading(.origin)])
        XCTAssertEqual(machine.peerFinished(.origin), [.finish(.client)])
        XCTAssertEqual(machine.peerFinished(.origin), [])
        XCTAssertEqual(machine.closed(.client), [.finish(.origin)])
        XCTAssertEqual(machine.state, .closed)
        XCTAssertEqual(machine.closed(.origin), [])
    }

    func testFailuresAnswerTheClient() {
        var refused = TunnelStateMachine(idleTimeout: 1000)
        XCTAssertEqual(refused.connectFailed(reason: "cannot connect: x", timeout: false, forbidden: false),
                       [.refuse(status: 502, reason: "Bad gateway: cannot connect: x\n")])
        XCTAssertEqual(refused.connected(), [], "too late")
        var slow = TunnelStateMachine(idleTimeout: 1000)
        XCTAssertEqual(slow.connectFailed(reason: "t", timeout: true, forbidden: false).first,
                       .refuse(status: 504, reason: "Gateway timeout: t\n"))
        var outside = TunnelStateMachine(idleTimeout: 1000)
        XCTAssertEqual(outside.connectFailed(reason: "f", timeout: false, forbidden: true).first,
                       .refuse(status: 403, reason: "Forbidden: f\n"))
        var gone = TunnelStateMachine(idleTimeout: 1000)
        XCTAssertEqual(gone.closed(.client), [.close(.origin)], "a client that left while connecting")
    }

    func testIdleTimeoutClosesBothSidesAfterATickWithoutBytes() {
        var machine = TunnelStateMachine(idleTimeout: 1000)
        _ = machine.connected()
        _ = machine.relayed(from: .client, queued: 0)
        XCTAssertEqual(machine.timerFired(), [.setTimer(milliseconds: 1000)], "bytes since the last tick")
        XCTAssertEqual(machine.timerFired(), [.close(.client), .close(.origin)])
        XCTAssertEqual(machine.state, .closed)
    }

    func testTheConnectionHandsItsBufferedBytesToTheTunnel() throws {
        var machine = ConnectionStateMachine(settings: .init(keepAliveTimeout: 1000, headTimeout: 1000, sendTimeout: 1000))
        _ = machine.start()
        let bytes = Array("CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n\u{16}\u{03}\u{01}".utf8)
        let actions = bytes.withUnsafeBytes { machine.bytesRead($0) }
        XCTAssertTrue(actions.contains { if case .handle(let head) = $0 { head.method == "CONNECT" } else { false } })
        let opened = machine.tunnelOpened()
        XCTAssertEqual(opened.first, .startTunnel(leftover: [0x16, 0x03, 0x01]))
        XCTAssertEqual(machine.state, .tunneling)
        XCTAssertFalse(opened.contains(.stopReading))
        XCTAssertEqual(Array("GET / HTTP/1.1\r\n\r\n".utf8).withUnsafeBytes { machine.bytesRead($0) }, [],
                       "a tunnel's bytes are never parsed")
        XCTAssertEqual(machine.timerFired(.init(bytesSent: 0, queued: 0)), [])
    }
}
