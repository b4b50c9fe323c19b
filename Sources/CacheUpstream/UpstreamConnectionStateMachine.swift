import CacheHTTP

/// The life of one keep-alive connection to an origin, as a value: events in,
/// actions out, no I/O. `UpstreamConnection` drives it.
///
/// Body bytes are never copied: `deliverBody` names ranges of the buffer given to
/// `bytesRead`, handed on while it is valid; the caller reuses the action list, so a
/// body read allocates nothing. A read holding a head and body bytes stops after the
/// head: the task's `headAccepted` decides whether the body is delivered or skipped.
struct UpstreamConnectionStateMachine {
    /// Which countdown to (re)start.
    enum Timer: Equatable {
        case connect, read, idle
    }

    enum Action {
        /// Send the request bytes.
        case write([UInt8])
        /// Start reading; it never stops on its own (an idle connection must see a close).
        case startReading
        /// Backpressure: stop taking bytes from the socket.
        case pauseReading
        case resumeReading
        case armTimer(Timer)
        /// An interim (1xx) head, for a delegate that relays it (RFC 9110 §15.2).
        case deliverInterim(HTTPResponseHead)
        /// The final response head; the driver answers with `headAccepted`.
        case deliverHead(HTTPResponseHead)
        /// Body bytes for the task: this range of the buffer given to `bytesRead`.
        case deliverBody(Range<Int>)
        /// Body bytes of a response whose body is skipped (a redirect).
        case skipBody(Int)
        /// The exchange ended cleanly; a reusable connection goes to the pool before the
        /// task hears of it, so a redirect to the same origin can take it.
        case complete(reusable: Bool)
        /// Connecting failed (the client may try the next address).
        case connectFailed(UpstreamError)
        /// Retryable only when the origin closed a reused connection before any response byte.
        case exchangeFailed(UpstreamError, retryable: Bool)
        /// Close the stream and drop the timer.
        case close
    }

    /// What one exchange knows besides its parsing state.
    struct Exchange {
        var method: String
        /// The connection had completed an exchange before this one.
        var reused: Bool
        /// Any byte of the response arrived (a 1xx included).
        var receivedAny = false
        /// The next bytes are the rest of a read whose head was just accepted (timer re-armed).
        var restOfRead = false
    }

    enum State {
        /// Before `connect`.
        case new
        /// TCP (and TLS) under way; the first request waits.
        case connecting(request: [UInt8], method: String)
        /// Ready, no exchange; any byte from the origin now is a fault.
        case idle
        /// Request sent; `buffer` holds a partial head split across reads.
        case awaitingHead(Exchange, buffer: [UInt8])
        /// Waiting for the task's verdict on the head; `leftover` bytes of the read follow it.
        case headDelivered(Exchange, framing: BodyFraming, keepAlive: Bool, leftover: Int)
        case body(Exchange, framing: BodyFraming, keepAlive: Bool, delivers: Bool)
        case closed
    }

    private(set) var state: State = .new
    /// The running exchange's consumer is full: reading stopped, timeouts re-arm instead of failing.
    private var paused = false
    private let label: String
    private let connectTimeout: UInt64
    private let readTimeout: UInt64

    /// `label` names the origin in errors; the timeouts (ms) only in messages.
    init(label: String, connectTimeout: UInt64, readTimeout: UInt64) {
        self.label = label
        self.connectTimeout = connectTimeout
        self.readTimeout = readTimeout
    }

    var isIdle: Bool { if case .idle = state { true } else { false } }
    var isClosed: Bool { if case .closed = state { true } else { false } }

    /// The stream is being opened for a first request.
    mutating func connect(request: [UInt8], method: String, into actions: inout [Action]) {
        guard case .new = state else { return }
        state = .connecting(request: request, method: method)
        actions.append(.armTimer(.connect))
    }

    /// The stream is ready (or could not be made so): the waiting request goes out.
    mutating func connected(error: UpstreamError?, into actions: inout [Action]) {
        guard case .connecting(let request, let method) = state else { return }
        if let error { return failConnecting(error, &actions) }
        send(request, Exchange(method: method, reused: false), &actions)
    }

    /// Starts an exchange on an idle connection. A connection closed meanwhile
    /// fails it as retryable: nothing was sent, a fresh connection may take it.
    mutating func start(request: [UInt8], method: String, into actions: inout [Action]) {
        switch state {
        case .idle:
            send(request, Exchange(method: method, reused: true), &actions)
        case .closed:
            actions.append(.exchangeFailed(.closedEarly("\(label) closed"), retryable: true))
        case .new, .connecting, .awaitingHead, .headDelivered, .body:
            preconditionFailure("an exchange started on a busy upstream connection")
        }
    }

    private mutating func send(_ request: [UInt8], _ exchange: Exchange, _ actions: inout [Action]) {
        state = .awaitingHead(exchange, buffer: [])
        paused = false
        actions += [.write(request), .startReading, .armTimer(.read)]
    }

    /// How many bytes were consumed: all, except after a response head (the rest waits for `headAccepted`).
    mutating func bytesRead(_ bytes: UnsafeRawBufferPointer, into actions: inout [Action]) -> Int {
        switch state {
        case .awaitingHead(var exchange, var buffer):
            // Drop the state's reference so `buffer` grows in place; `readHead` sets the state.
            state = .new
            exchange.receivedAny = true
            actions.append(.armTimer(.read))
            return readHead(bytes, exchange, &buffer, &actions)
        case .body(var exchange, let framing, let keepAlive, let delivers):
            exchange.receivedAny = true
            if exchange.restOfRead { exchange.restOfRead = false } else { actions.append(.armTimer(.read)) }
            readBody(bytes, exchange, framing, keepAlive, delivers, &actions)
            return bytes.count
        case .idle:
            // Bytes nobody asked for: the origin is confused; drop the connection.
            close(into: &actions)
            return bytes.count
        case .headDelivered:
            return 0  // the driver answers the head first
        case .new, .connecting, .closed:
            return bytes.count
        }
    }

    /// The task's answer to `deliverHead`: whether the body is for it or skipped.
    mutating func headAccepted(deliversBody: Bool, into actions: inout [Action]) {
        guard case .headDelivered(var exchange, let framing, let keepAlive, let leftover) = state else { return }
        if case .none = framing {
            if leftover > 0 {
                return failExchange(.protocolViolation("\(label): bytes after a body-less response"), exchange, &actions)
            }
            return complete(keepAlive: keepAlive, &actions)
        }
        exchange.restOfRead = leftover > 0
        state = .body(exchange, framing: framing, keepAlive: keepAlive, delivers: deliversBody)
    }

    /// The origin finished sending.
    mutating func eof(into actions: inout [Action]) {
        switch state {
        case .connecting:
            failConnecting(.closedEarly("\(label) closed before a response"), &actions)
        case .awaitingHead(let exchange, _):
            failExchange(.closedEarly("\(label) closed before a response"), exchange, &actions)
        case .headDelivered(let exchange, let framing, _, let leftover):
            switch framing {
            case .untilClose: complete(keepAlive: false, &actions)
            case .none where leftover == 0: complete(keepAlive: false, &actions)
            default: failExchange(.closedEarly("\(label) closed mid-body"), exchange, &actions)
            }
        case .body(_, .untilClose, _, _):
            complete(keepAlive: false, &actions)
        case .body(let exchange, _, _, _):
            failExchange(.closedEarly("\(label) closed mid-body"), exchange, &actions)
        case .idle, .new:
            close(into: &actions)
        case .closed:
            break
        }
    }

    /// The armed countdown ran out.
    mutating func timerFired(into actions: inout [Action]) {
        switch state {
        case .connecting:
            failConnecting(.timeout("connecting to \(label) took over \(connectTimeout) ms"), &actions)
        case .awaitingHead(let exchange, _), .headDelivered(let exchange, _, _, _), .body(let exchange, _, _, _):
            // Waiting for our own consumer is not the origin's silence.
            if paused { return actions.append(.armTimer(.read)) }
            failExchange(.timeout("no data from \(label) for \(readTimeout) ms"), exchange, &actions)
        case .idle:
            close(into: &actions)
        case .new, .closed:
            break
        }
    }

    /// Backpressure: stop reading until `resume`.
    mutating func pause(into actions: inout [Action]) {
        guard inExchange, !paused else { return }
        paused = true
        actions.append(.pauseReading)
    }

    mutating func resume(into actions: inout [Action]) {
        guard inExchange, paused else { return }
        paused = false
        actions.append(.armTimer(.read))
        actions.append(.resumeReading)
    }

    private var inExchange: Bool {
        switch state {
        case .awaitingHead, .headDelivered, .body: true
        case .new, .connecting, .idle, .closed: false
        }
    }

    /// The task let go: a half-read response is not reused; a completed one leaves the connection idle.
    mutating func abandon(into actions: inout [Action]) {
        switch state {
        case .idle, .new, .closed: break
        case .connecting, .awaitingHead, .headDelivered, .body: close(into: &actions)
        }
    }

    /// The stream closed; the error says why, if it broke.
    mutating func closed(error: UpstreamError?, into actions: inout [Action]) {
        let error = error ?? .closedEarly("\(label) closed")
        switch state {
        case .connecting:
            failConnecting(error, &actions)
        case .awaitingHead(let exchange, _), .headDelivered(let exchange, _, _, _), .body(let exchange, _, _, _):
            failExchange(error, exchange, &actions)
        case .new, .idle:
            close(into: &actions)
        case .closed:
            break
        }
    }

    /// Parses the final head out of `buffer` and `bytes`, skipping interim (1xx)
    /// responses; straight from `bytes`, no copy, when no partial head is pending.
    private mutating func readHead(_ bytes: UnsafeRawBufferPointer, _ exchange: Exchange, _ buffer: inout [UInt8],
                                   _ actions: inout [Action]) -> Int {
        var offset = 0
        // The first parse of a read that completes a partial head runs over the joined bytes.
        var joined = !buffer.isEmpty
        if joined { buffer.append(contentsOf: bytes) }
        while true {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            switch joined ? buffer.withUnsafeBytes({ ResponseHeadParser.parse($0) }) : ResponseHeadParser.parse(rest) {
            case .failure(let error):
                failExchange(.protocolViolation("\(label): \(error)"), exchange, &actions)
                return bytes.count
            case .success(nil):
                state = .awaitingHead(exchange, buffer: joined ? buffer : Array(rest))
                return bytes.count
            case .success(let (head, consumed)?):
                // No head was complete before this read, so what follows a joined one lies in `bytes`.
                offset = joined ? bytes.count - (buffer.count - consumed) : offset + consumed
                joined = false
                if let done = headParsed(head, offset, bytes.count, exchange, &actions) { return done }
            }
        }
    }

    /// A head ending at `end` of a `count`-byte read: nil for an interim one, else bytes consumed.
    private mutating func headParsed(_ head: HTTPResponseHead, _ end: Int, _ count: Int, _ exchange: Exchange,
                                     _ actions: inout [Action]) -> Int? {
        if head.status == 101 {
            // The proxy never asks to upgrade (Upgrade is hop-by-hop): a broken origin.
            failExchange(.protocolViolation("\(label): 101 Switching Protocols without an upgrade asked for"),
                         exchange, &actions)
            return count
        }
        if (100..<200).contains(head.status) {
            actions.append(.deliverInterim(head))
            return nil
        }
        let framing: BodyFraming
        do {
            framing = try BodyFraming(for: head, requestMethod: exchange.method)
        } catch {
            failExchange(error, exchange, &actions)
            return count
        }
        state = .headDelivered(exchange, framing: framing, keepAlive: head.keepAlive, leftover: count - end)
        actions.append(.deliverHead(head))
        return end
    }

    private mutating func readBody(_ bytes: UnsafeRawBufferPointer, _ exchange: Exchange, _ framing: BodyFraming,
                                   _ keepAlive: Bool, _ delivers: Bool, _ actions: inout [Action]) {
        let count = bytes.count
        func hand(_ range: Range<Int>) {
            guard !range.isEmpty else { return }
            actions.append(delivers ? .deliverBody(range) : .skipBody(range.count))
        }
        switch framing {
        case .none:
            failExchange(.protocolViolation("\(label): unexpected body bytes"), exchange, &actions)
        case .untilClose:
            state = .body(exchange, framing: framing, keepAlive: keepAlive, delivers: delivers)
            hand(0..<count)
        case .length(let remaining):
            // Checked before delivering: a response overrunning its length is not trusted.
            guard Int64(count) <= remaining else {
                return failExchange(.protocolViolation("\(label): more body bytes than Content-Length"), exchange, &actions)
            }
            hand(0..<count)
            if Int64(count) == remaining {
                complete(keepAlive: keepAlive, &actions)
            } else {
                state = .body(exchange, framing: .length(remaining: remaining - Int64(count)),
                              keepAlive: keepAlive, delivers: delivers)
            }
        case .chunked(var decoder):
            let base = bytes.baseAddress
            do {
                let (consumed, done) = try decoder.feed(bytes) { data in
                    guard let start = data.baseAddress, let base else { return }
                    let offset = base.distance(to: start)
                    hand(offset..<(offset + data.count))
                }
                if !done {
                    state = .body(exchange, framing: .chunked(decoder), keepAlive: keepAlive, delivers: delivers)
                } else if consumed < count {
                    failExchange(.protocolViolation("\(label): bytes after the last chunk"), exchange, &actions)
                } else {
                    complete(keepAlive: keepAlive, &actions)
                }
            } catch {
                failExchange(.protocolViolation("\(label): bad chunked body (\(error))"), exchange, &actions)
            }
        }
    }

    /// The response ended: idle and reusable, or closed.
    private mutating func complete(keepAlive: Bool, _ actions: inout [Action]) {
        guard keepAlive else {
            close(into: &actions)
            return actions.append(.complete(reusable: false))
        }
        state = .idle
        // The last bytes may have come with the pause: pooled connections read.
        if paused { actions.append(.resumeReading) }
        paused = false
        actions.append(.armTimer(.idle))
        actions.append(.complete(reusable: true))
    }

    /// Only a reused connection closed before any response byte is retried (dropped while
    /// idle); not a timeout (the client would wait twice), nor anything after a byte.
    private mutating func failExchange(_ error: UpstreamError, _ exchange: Exchange, _ actions: inout [Action]) {
        close(into: &actions)
        let retryable = exchange.reused && !exchange.receivedAny && !error.isTimeout
        actions.append(.exchangeFailed(error, retryable: retryable))
    }

    private mutating func failConnecting(_ error: UpstreamError, _ actions: inout [Action]) {
        close(into: &actions)
        actions.append(.connectFailed(error))
    }

    /// Closes without telling anyone (pool overflow, shutdown, a confused origin).
    mutating func close(into actions: inout [Action]) {
        if case .closed = state { return }
        state = .closed
        actions.append(.close)
    }
}
