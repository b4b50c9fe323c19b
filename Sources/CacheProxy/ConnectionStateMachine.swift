import CacheHTTP

/// The life of one client connection as a value: socket and exchange events in, actions out.
/// `ClientConnection` performs the actions and feeds back the events they raise (queued, never re-entrant).
///
/// ```
///                 head parsed                       response queued + socket drained
///   ┌──────────┐ ───────────────▶ ┌────────────┐ ──────────────────────────────────┐
///   │ awaiting │                  │ responding │                                   │
///   │   head   │ ◀─────────────── └────────────┘ ── queued, not keep-alive ──┐     │
///   └──────────┘   keep-alive (next head is parsed from the buffer at once)   ▼     │
///        │ bad head / idle or head timeout / EOF                        ┌──────────┐│
///        └─────────────────────────────────────────────────────────────▶│ draining ││
///                                                                        └──────────┘│
///                                        socket closed (any state) ──▶ closed ◀──────┘
/// ```
///
/// One response is in flight at a time (HTTP/1.1 answers in order). Pipelined requests wait as raw
/// bytes in `buffer`, which is bounded (reading pauses while it is full), so neither a fast pipeliner
/// nor a client that never reads grows memory. The next request starts once the previous response
/// has left the socket's queue.
package struct ConnectionStateMachine {
    package enum State: Equatable {
        /// No response in flight; the buffer holds at most a partial head.
        case awaitingHead
        /// A head with a body: its route and access are decided (`admitBody`) before a byte of it is read.
        case admittingBody
        /// The admitted body is being collected (bounded) before the request is handled.
        case readingBody
        /// `queued` is set once the exchange handed the socket its last byte (with its keep-alive verdict).
        case responding(queued: Bool?)
        case draining
        /// A CONNECT was answered 2xx: the tunnel reads, times and closes the connection from now on.
        case tunneling
        case closed
    }

    package enum Action: Equatable {
        case handle(HTTPRequestHead)
        /// May this request's body be read? The driver answers `bodyAdmitted` or `bodyRefused`.
        case admitBody(HTTPRequestHead)
        case handleWithBody(HTTPRequestHead, [UInt8])
        /// Interim "100 Continue": the client waits for it before sending its body (RFC 9110 §10.1.1).
        case sendContinue
        case reject(HeadParseError)
        case startReading
        case stopReading
        /// (Re)arm the connection's single timer; nil cancels it.
        case setTimer(milliseconds: UInt64?)
        case closeAfterDrain
        case closeNow
        /// The response in flight is sent (or given up): release what it holds.
        case endResponse
        /// Now a tunnel: these bytes, read after the CONNECT head, go to the origin first.
        case startTunnel(leftover: [UInt8])
    }

    /// Socket events, and the driver's answers to actions (`admitBody`, the exchange's end).
    package enum Event {
        case started
        /// Valid during `handle` only. A whole request in one read (the usual case) is parsed in place.
        case bytesRead(UnsafeRawBufferPointer)
        case peerFinished
        /// The exchange handed the socket its last byte; `drained`: the socket's queue is already empty.
        case responseQueued(keepAlive: Bool, drained: Bool)
        case bodyAdmitted
        /// The request being admitted is answered with a refusal, its body unread.
        case bodyRefused
        case tunnelOpened
        case socketDrained
        case responseAborted
        /// The timer fired; the socket's progress now.
        case timerFired(SendProgress)
        case socketClosed
    }

    package struct Settings: Sendable {
        package var keepAliveTimeout: UInt64
        /// Milliseconds for a whole request head, from its first byte; never longer than `keepAliveTimeout`.
        package var headTimeout: UInt64
        /// Milliseconds a client may accept no byte of a queued response before it is closed.
        package var sendTimeout: UInt64
        /// Most unparsed bytes buffered (pipelined requests); reading pauses past it.
        package var maxBuffered = 64 << 10
        /// Largest pass-through request body collected; larger ones get 413.
        package var maxRequestBody = 8 << 20
        package var limits = HeadLimits()

        package init(keepAliveTimeout: UInt64 = 60_000, headTimeout: UInt64 = 10_000, sendTimeout: UInt64 = 60_000) {
            self.keepAliveTimeout = keepAliveTimeout
            self.headTimeout = headTimeout
            self.sendTimeout = sendTimeout
        }
    }

    package private(set) var state: State = .awaitingHead
    /// Bytes received; those from `cursor` on are not parsed yet. Taking a request moves `cursor`,
    /// not the rest of the buffer, so a deep pipeline costs no quadratic copying.
    private var buffer: [UInt8] = []
    private var cursor = 0
    package private(set) var peerClosed = false
    /// Derived from `readingWanted`, remembered only to emit start/stop on a change.
    package private(set) var reading = false
    private var timer: Timer?
    private let settings: Settings
    /// The request whose body is being admitted or read.
    private var bodyHead: HTTPRequestHead?
    private var body: RequestBody?
    private var bodyFraming: RequestBody.Framing?
    /// The request in flight has a body refused unread: the connection closes after its response
    /// (the body's bytes would be taken for the next request).
    private var bodyUnread = false

    private enum Timer: Equatable { case keepAlive, head, send }

    package struct SendProgress: Equatable, Sendable {
        package var bytesSent: UInt64
        /// Bytes queued and not yet sent.
        package var queued: Int
    }

    /// Ticks per `sendTimeout`: a client is closed once that many in a row saw bytes waiting and none sent (1
    /// to 1⅛ timeouts without progress). Ticking keeps the machine free of clocks.
    package static let sendTicksPerTimeout: UInt64 = 8
    /// Bytes sent at the last tick (nil: none since the response began).
    private var lastBytesSent: UInt64?
    private var stalledTicks: UInt64 = 0
    private var sendTick: UInt64 { max(1, settings.sendTimeout / Self.sendTicksPerTimeout) }

    package init(settings: Settings) {
        self.settings = settings
    }

    // MARK: events (each handler is documented by its `Event` case)

    package mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .started: start()
        case .bytesRead(let bytes): bytesRead(bytes)
        case .peerFinished: peerFinished()
        case .responseQueued(let keepAlive, let drained): responseQueued(keepAlive: keepAlive, drained: drained)
        case .bodyAdmitted: bodyAdmitted()
        case .bodyRefused: bodyRefused()
        case .tunnelOpened: tunnelOpened()
        case .socketDrained: socketDrained()
        case .responseAborted: responseAborted()
        case .timerFired(let progress): timerFired(progress)
        case .socketClosed: socketClosed()
        }
    }

    private mutating func start() -> [Action] { settle() }

    private mutating func bytesRead(_ bytes: UnsafeRawBufferPointer) -> [Action] {
        guard state != .closed, state != .draining, state != .tunneling else { return [] }
        var actions: [Action] = []
        actions.reserveCapacity(4)  // a request's handle, timer and reading: one allocation, not three
        if state == .awaitingHead && unparsed == 0 {
            switch RequestHeadParser.parse(bytes, limits: settings.limits) {
            case .success(let (head, consumed)?) where consumed == bytes.count:
                begin(head, &actions)
                updateTimer(&actions)
                updateReading(&actions)
                return actions
            default:
                break  // partial, pipelined or malformed: the buffer path decides
            }
        }
        compactIfWorthIt()
        buffer.append(contentsOf: bytes)
        if state == .readingBody { continueBody(&actions) }
        if state == .awaitingHead { parseNext(&actions) }
        updateTimer(&actions)
        updateReading(&actions)
        return actions
    }

    private mutating func peerFinished() -> [Action] {
        guard state != .closed, state != .tunneling else { return [] }
        peerClosed = true
        var actions: [Action] = []
        if state == .readingBody {
            // The body can never complete.
            state = .draining
            body = nil
            bodyHead = nil
            actions.append(.closeAfterDrain)
        }
        // (While admitting, the driver's answer comes first: it is given during the same actions.)
        if state == .awaitingHead { parseNext(&actions) }
        updateReading(&actions)
        return actions
    }

    private mutating func responseQueued(keepAlive: Bool, drained: Bool) -> [Action] {
        guard case .responding = state else { return [] }
        state = .responding(queued: keepAlive && !bodyUnread)
        return drained ? socketDrained() : []
    }

    /// "100 Continue" (when asked for) goes out now, then the body is read.
    private mutating func bodyAdmitted() -> [Action] {
        guard state == .admittingBody, let head = bodyHead, let framing = bodyFraming else { return [] }
        state = .readingBody
        bodyFraming = nil
        body = RequestBody(framing, limit: settings.maxRequestBody)
        var actions: [Action] = []
        if head.version != .http10, head.headers.hasToken("100-continue", in: "Expect") {
            actions.append(.sendContinue)
        }
        continueBody(&actions)
        return settle(actions)
    }

    /// The refused request is answered with its body unread; the connection closes after the answer.
    private mutating func bodyRefused() -> [Action] {
        guard state == .admittingBody, let head = bodyHead else { return [] }
        state = .responding(queued: nil)
        bodyHead = nil
        bodyFraming = nil
        bodyUnread = true
        // What follows the head is that body, never another request.
        buffer = []
        cursor = 0
        return settle([.handle(head)])
    }

    /// The machine lets go (no heads, no timer: the tunnel's) and hands over what it buffered after the head.
    private mutating func tunnelOpened() -> [Action] {
        guard case .responding(nil) = state else { return [] }
        state = .tunneling
        let leftover = Array(buffer[cursor...])
        buffer = []
        cursor = 0
        return settle([.startTunnel(leftover: leftover)])
    }

    private mutating func socketDrained() -> [Action] {
        guard case .responding(let queued?) = state else { return [] }
        var actions: [Action] = []
        actions.reserveCapacity(4)
        actions.append(.endResponse)
        if queued {
            state = .awaitingHead
            parseNext(&actions)
        } else {
            state = .draining
            actions.append(.closeAfterDrain)
        }
        updateTimer(&actions)
        updateReading(&actions)
        return actions
    }

    /// What is queued goes out, then the connection closes (a short body, never a wrong byte).
    private mutating func responseAborted() -> [Action] {
        guard state != .closed, state != .draining, state != .tunneling else { return [] }
        let wasResponding = if case .responding = state { true } else { false }
        state = .draining
        return settle(wasResponding ? [.endResponse, .closeAfterDrain] : [.closeAfterDrain])
    }

    private mutating func timerFired(_ progress: SendProgress) -> [Action] {
        switch timer {
        case .keepAlive?, .head?:
            // An idle connection, or a head (or request body) that is still not complete.
            guard state == .awaitingHead || state == .readingBody || state == .admittingBody else { return [] }
        case .send?:
            // Waiting for the origin (nothing queued) is not the client's fault.
            let moved = lastBytesSent.map { progress.bytesSent != $0 } ?? false
            lastBytesSent = progress.bytesSent
            stalledTicks = (moved || progress.queued == 0) ? 0 : stalledTicks + 1
            guard stalledTicks >= Self.sendTicksPerTimeout else { return [.setTimer(milliseconds: sendTick)] }
            // The client accepts nothing: drop its queue rather than hold it.
        case nil:
            return []
        }
        // (The driver ends a response in flight when the socket reports its close.)
        state = .closed
        timer = nil
        return [.setTimer(milliseconds: nil), .closeNow]
    }

    /// True once the last close was for a client that stopped reading.
    package var sendTimedOut: Bool { stalledTicks >= Self.sendTicksPerTimeout }

    private mutating func socketClosed() -> [Action] {
        guard state != .closed else { return [] }
        state = .closed
        buffer = []
        cursor = 0
        return settle()
    }

    // MARK: rules

    /// `actions` plus the timer and reading changes the state now asks for.
    private mutating func settle(_ actions: [Action] = []) -> [Action] {
        var actions = actions
        updateTimer(&actions)
        updateReading(&actions)
        return actions
    }

    package var unparsed: Int { buffer.count - cursor }
    /// As many pipelined bytes as it buffers: reading waits.
    package var isBufferFull: Bool { unparsed >= settings.maxBuffered }

    /// Drops the parsed prefix once it is most of the buffer.
    private mutating func compactIfWorthIt() {
        guard cursor > 0, cursor >= buffer.count / 2 else { return }
        buffer.removeFirst(cursor)
        cursor = 0
    }

    private mutating func parseNext(_ actions: inout [Action]) {
        guard state == .awaitingHead else { return }
        if unparsed == 0 {
            if peerClosed {
                state = .draining
                actions.append(.closeAfterDrain)
            }
            return
        }
        let parsed = buffer.withUnsafeBytes {
            RequestHeadParser.parse(UnsafeRawBufferPointer(rebasing: $0[cursor...]), limits: settings.limits)
        }
        switch parsed {
        case .failure(let error):
            reject(error, &actions)
        case .success(nil):
            if peerClosed {
                state = .draining  // a head that can never complete
                actions.append(.closeAfterDrain)
            }
        case .success(let (head, consumed)?):
            cursor += consumed
            if cursor == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                cursor = 0
            }
            begin(head, &actions)
            if state == .readingBody { continueBody(&actions) }
        }
    }

    /// A head was parsed: handle it, or first collect its body.
    private mutating func begin(_ head: HTTPRequestHead, _ actions: inout [Action]) {
        switch RequestBody.framing(of: head, limit: settings.maxRequestBody) {
        case .failure(let error):
            reject(error, &actions)
        case .success(nil):
            state = .responding(queued: nil)
            actions.append(.handle(head))
        case .success(let framing?):
            // Nothing of the body is read (nor 100 Continue sent) before the route and access are decided.
            state = .admittingBody
            bodyHead = head
            bodyFraming = framing
            actions.append(.admitBody(head))
        }
    }

    /// Answered with `error`, then the connection drains (nothing after it in the buffer is a request).
    private mutating func reject(_ error: HeadParseError, _ actions: inout [Action]) {
        state = .draining
        buffer = []
        cursor = 0
        actions.append(.reject(error))
    }

    /// Feeds buffered bytes to the body being read; hands the request on once it is whole.
    private mutating func continueBody(_ actions: inout [Action]) {
        guard state == .readingBody, var current = body, let head = bodyHead else { return }
        let result = buffer.withUnsafeBytes { current.feed(UnsafeRawBufferPointer(rebasing: $0[cursor...])) }
        switch result {
        case .failure(let error):
            body = nil
            bodyHead = nil
            reject(error, &actions)
        case .success(let (consumed, done)):
            cursor += consumed
            if cursor == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                cursor = 0
            }
            if done {
                body = nil
                bodyHead = nil
                state = .responding(queued: nil)
                actions.append(.handleWithBody(head, current.bytes))
            } else {
                body = current
            }
        }
    }

    private func readingWanted() -> Bool {
        switch state {
        case .closed, .draining: return false
        case .tunneling: return reading  // the tunnel's to decide
        case .awaitingHead, .responding: return !peerClosed && !isBufferFull && !bodyUnread
        case .admittingBody: return false
        case .readingBody: return !peerClosed
        }
    }

    private mutating func updateReading(_ actions: inout [Action]) {
        let wanted = readingWanted()
        guard wanted != reading, state != .closed else { return }
        reading = wanted
        actions.append(wanted ? .startReading : .stopReading)
    }

    /// One timer, by state: keep-alive while idle, head from a head's first byte (not restarted), else none.
    private mutating func updateTimer(_ actions: inout [Action]) {
        let wanted: Timer?
        switch state {
        case .awaitingHead: wanted = unparsed == 0 ? .keepAlive : .head
        // The head timer runs on: head and body together must arrive in time.
        case .readingBody, .admittingBody: wanted = .head
        case .responding, .draining: wanted = .send
        case .closed, .tunneling: wanted = nil
        }
        guard wanted != timer else { return }
        timer = wanted
        switch wanted {
        case .keepAlive?: actions.append(.setTimer(milliseconds: settings.keepAliveTimeout))
        // The head timeout runs within an idle connection's: never longer.
        case .head?: actions.append(.setTimer(milliseconds: min(settings.headTimeout, settings.keepAliveTimeout)))
        case .send?:
            lastBytesSent = nil
            stalledTicks = 0
            actions.append(.setTimer(milliseconds: sendTick))
        case nil: actions.append(.setTimer(milliseconds: nil))
        }
    }
}
