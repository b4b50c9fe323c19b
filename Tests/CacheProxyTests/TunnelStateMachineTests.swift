import CacheHTTP
import XCTest
@testable import CacheProxy

/// The CONNECT relay's rules, without sockets.
final class TunnelStateMachineTests: XCTestCase {
    func testConnectsRelaysWithBackpressureBothWaysAndClosesAfterTheOtherSide() {
        var machine = TunnelStateMachine(highWater: 100, idleTimeout: 1000)
        XCTAssertEqual(machine.handle(.connected), [.established, .startReading(.client), .startReading(.origin),
                                             .setTimer(milliseconds: 1000)])
        XCTAssertEqual(machine.handle(.relayed(from: .client, queued: 100)), [], "at the mark: still read")
        XCTAssertEqual(machine.handle(.relayed(from: .client, queued: 101)), [.stopReading(.client)])
        XCTAssertEqual(machine.handle(.relayed(from: .client, queued: 500)), [], "paused once")
        XCTAssertEqual(machine.handle(.drained(.client)), [], "the client's queue says nothing of the origin's")
        XCTAssertEqual(machine.handle(.drained(.origin)), [.startReading(.client)])
        XCTAssertEqual(machine.handle(.relayed(from: .origin, queued: 1 << 20)), [.stopReading(.origin)])
        XCTAssertEqual(machine.handle(.drained(.client)), [.startReading(.origin)])
        XCTAssertEqual(machine.handle(.peerFinished(.origin)), [.finish(.client)])
        XCTAssertEqual(machine.handle(.peerFinished(.origin)), [])
        XCTAssertEqual(machine.handle(.closed(.client)), [.finish(.origin)])
        XCTAssertEqual(machine.state, .closed)
        XCTAssertEqual(machine.handle(.closed(.origin)), [])
    }

    func testFailuresAnswerTheClient() {
        var refused = TunnelStateMachine(idleTimeout: 1000)
        XCTAssertEqual(refused.handle(.connectFailed(reason: "cannot connect: x", timeout: false, forbidden: false)),
                       [.refuse(status: 502, reason: "Bad gateway: cannot connect: x\n")])
        XCTAssertEqual(refused.handle(.connected), [], "too late")
        var slow = TunnelStateMachine(idleTimeout: 1000)
        XCTAssertEqual(slow.handle(.connectFailed(reason: "t", timeout: true, forbidden: false)).first,
                       .refuse(status: 504, reason: "Gateway timeout: t\n"))
        var outside = TunnelStateMachine(idleTimeout: 1000)
        XCTAssertEqual(outside.handle(.connectFailed(reason: "f", timeout: false, forbidden: true)).first,
                       .refuse(status: 403, reason: "Forbidden: f\n"))
        var gone = TunnelStateMachine(idleTimeout: 1000)
        XCTAssertEqual(gone.handle(.closed(.client)), [.close(.origin)], "a client that left while connecting")
    }

    func testIdleTimeoutClosesBothSidesAfterATickWithoutBytes() {
        var machine = TunnelStateMachine(idleTimeout: 1000)
        _ = machine.handle(.connected)
        _ = machine.handle(.relayed(from: .client, queued: 0))
        XCTAssertEqual(machine.handle(.timerFired), [.setTimer(milliseconds: 1000)], "bytes since the last tick")
        XCTAssertEqual(machine.handle(.timerFired), [.close(.client), .close(.origin)])
        XCTAssertEqual(machine.state, .closed)
    }

    func testTheConnectionHandsItsBufferedBytesToTheTunnel() throws {
        var machine = ConnectionStateMachine(settings: .init(keepAliveTimeout: 1000, headTimeout: 1000, sendTimeout: 1000))
        _ = machine.handle(.started)
        let bytes = Array("CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n\u{16}\u{03}\u{01}".utf8)
        let actions = bytes.withUnsafeBytes { machine.handle(.bytesRead($0)) }
        XCTAssertTrue(actions.contains { if case .handle(let head) = $0 { head.method == "CONNECT" } else { false } })
        let opened = machine.handle(.tunnelOpened)
        XCTAssertEqual(opened.first, .startTunnel(leftover: [0x16, 0x03, 0x01]))
        XCTAssertEqual(machine.state, .tunneling)
        XCTAssertFalse(opened.contains(.stopReading))
        XCTAssertEqual(Array("GET / HTTP/1.1\r\n\r\n".utf8).withUnsafeBytes { machine.handle(.bytesRead($0)) }, [],
                       "a tunnel's bytes are never parsed")
        XCTAssertEqual(machine.handle(.timerFired(.init(bytesSent: 0, queued: 0))), [])
    }
}
