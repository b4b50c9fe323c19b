/// The life of one CONNECT tunnel as a value: events of its two sides in, actions out. `Tunnel`
/// performs them; no byte passes through here, only how many wait on each side.
///
/// ```
///  connecting ──connected──▶ relaying ──either side closed, or idle──▶ closed
///       │ failed (403/502/504 answered) ──────────────────────────────────▲
/// ```
///
/// - Backpressure: a side is not read while more than `highWater` of its bytes wait on the other,
///   and is read again once that side drained.
/// - A side that finishes sending (EOF) has the other closed once its queue is sent: what was
///   relayed still arrives. (TLS ends with its own close_notify: no half-open direction is needed.)
/// - Idle timeout: the timer ticks every `idleTimeout`; a tick that saw no byte either way since the
///   last closes both sides (a tunnel idle between one and two timeouts is closed).
package struct TunnelStateMachine {
    package enum Side: Equatable, Sendable {
        case client, origin
        var other: Side { self == .client ? .origin : .client }
    }

    package enum State: Equatable, Sendable { case connecting, relaying, closed }

    package enum Action: Equatable, Sendable {
        /// Tell the client the tunnel is open (200) and hand it the connection.
        case established
        case refuse(status: Int, reason: String)
        case startReading(Side)
        case stopReading(Side)
        case finish(Side)
        case close(Side)
        case setTimer(milliseconds: UInt64)
    }

    package enum Event: Equatable, Sendable {
        case connected
        /// `timeout` and `forbidden` choose 504 and 403, anything else is 502.
        case connectFailed(reason: String, timeout: Bool, forbidden: Bool)
        /// Bytes read from a side were queued on the other side, where `queued` now wait.
        case relayed(from: Side, queued: Int)
        case drained(Side)
        case peerFinished(Side)
        case closed(Side)
        case timerFired
    }

    package private(set) var state: State = .connecting
    private let highWater: Int
    private let idleTimeout: UInt64
    /// Sides whose reading is paused (their bytes wait on the other side).
    private var paused: Set<Side> = []
    private var finished: Set<Side> = []
    /// A byte went either way since the last tick.
    private var active = false

    /// `highWater`: bytes waiting on one side past which the other is not read; `idleTimeout`:
    /// milliseconds without a byte either way before both sides close.
    package init(highWater: Int = 256 << 10, idleTimeout: UInt64) {
        self.highWater = highWater
        self.idleTimeout = idleTimeout
    }

    package mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .connected: connected()
        case .connectFailed(let reason, let timeout, let forbidden): connectFailed(reason: reason, timeout: timeout, forbidden: forbidden)
        case .relayed(let side, let queued): relayed(from: side, queued: queued)
        case .drained(let side): drained(side)
        case .peerFinished(let side): peerFinished(side)
        case .closed(let side): closed(side)
        case .timerFired: timerFired()
        }
    }

    private mutating func connected() -> [Action] {
        guard state == .connecting else { return [] }
        state = .relaying
        return [.established, .startReading(.client), .startReading(.origin), .setTimer(milliseconds: idleTimeout)]
    }

    private mutating func connectFailed(reason: String, timeout: Bool, forbidden: Bool) -> [Action] {
        guard state == .connecting else { return [] }
        state = .closed
        let status = forbidden ? 403 : timeout ? 504 : 502
        let title = forbidden ? "Forbidden" : timeout ? "Gateway timeout" : "Bad gateway"
        return [.refuse(status: status, reason: "\(title): \(reason)\n")]
    }

    private mutating func relayed(from side: Side, queued: Int) -> [Action] {
        guard state == .relaying else { return [] }
        active = true
        guard queued > highWater, !paused.contains(side) else { return [] }
        paused.insert(side)
        return [.stopReading(side)]
    }

    private mutating func drained(_ side: Side) -> [Action] {
        guard state == .relaying else { return [] }
        active = true
        let source = side.other
        guard paused.contains(source), !finished.contains(source) else { return [] }
        paused.remove(source)
        return [.startReading(source)]
    }

    private mutating func peerFinished(_ side: Side) -> [Action] {
        guard state == .relaying, !finished.contains(side) else { return [] }
        finished.insert(side)
        return [.finish(side.other)]
    }

    /// `side` is gone: the other goes once its queue is sent.
    private mutating func closed(_ side: Side) -> [Action] {
        switch state {
        case .closed:
            return []
        case .connecting:
            // The client left while the origin was being reached.
            state = .closed
            return side == .client ? [.close(.origin)] : []
        case .relaying:
            state = .closed
            return [.finish(side.other)]
        }
    }

    private mutating func timerFired() -> [Action] {
        guard state == .relaying else { return [] }
        guard active else {
            state = .closed
            return [.close(.client), .close(.origin)]
        }
        active = false
        return [.setTimer(milliseconds: idleTimeout)]
    }
}
