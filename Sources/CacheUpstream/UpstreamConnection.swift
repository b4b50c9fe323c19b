import CacheHTTP
import CacheIO

/// One keep-alive connection to an origin, running one exchange at a time.
/// Loop thread only. Its stream keeps this object alive until it closes.
final class UpstreamConnection: UpstreamStreamDelegate {
    enum State { case connecting, idle, busy, closed }

    let poolKey: String
    let label: String
    private let loop: EventLoop
    private let configuration: UpstreamConfiguration
    private weak var client: UpstreamClient?
    private var stream: UpstreamStream?
    private var timer: LoopTimer?
    private(set) var state: State = .connecting
    private(set) var task: UpstreamTask?
    /// True once an exchange has completed on it (it is a reused connection).
    private(set) var wasUsed = false

    private var headBuffer: [UInt8] = []
    private var head: HTTPResponseHead?
    private var framing: BodyFraming = .none
    private var receivedAny = false
    /// False while the body of a redirect is skipped instead of delivered.
    private var deliversBody = true

    init(poolKey: String, label: String, loop: EventLoop, configuration: UpstreamConfiguration, client: UpstreamClient) {
        self.poolKey = poolKey
        self.label = label
        self.loop = loop
        self.configuration = configuration
        self.client = client
    }

    /// Connects (and for https, shakes hands over `tls`); the task runs once ready.
    func connect(to address: SocketAddress, tls: TLSSession?, for task: UpstreamTask) {
        self.task = task
        state = .connecting
        do {
            stream = try UpstreamStream.connect(on: loop, to: address, tls: tls, label: label, delegate: self)
        } catch {
            state = .closed
            self.task = nil
            client?.connectionFailed(self, task: task, error: .connect("\(label): \(error)"))
            client?.forget(self)
            return
        }
        arm(configuration.connectTimeout)
    }

    /// Starts an exchange on a connected, idle connection.
    func run(_ task: UpstreamTask) {
        precondition(state == .idle)
        self.task = task
        task.connection = self
        state = .busy
        head = nil
        headBuffer.removeAll(keepingCapacity: true)
        receivedAny = false
        deliversBody = true
        framing = .none
        stream?.write(task.request)
        stream?.startReading()
        arm(configuration.readTimeout)
    }

    /// Drops the connection mid-exchange (the task was cancelled or moves on).
    /// A task cancelled by the last byte of its body leaves the connection
    /// reusable: the exchange then completes without it.
    func abandon() {
        task = nil
        if state == .busy, head != nil, case .length(remaining: 0) = framing { return }
        close()
    }

    func close() {
        guard state != .closed else { return }
        state = .closed
        timer?.cancel()
        timer = nil
        stream?.close()
    }

    private var paused = false

    private func arm(_ milliseconds: UInt64) {
        if let timer {
            timer.reset(milliseconds: milliseconds)
        } else {
            timer = LoopTimer(on: loop, after: milliseconds) { [weak self] in self?.timedOut() }
        }
    }

    /// Backpressure: stop reading the body until `resume()`.
    func pause() {
        guard state == .busy, !paused else { return }
        paused = true
        stream?.pauseReading()
    }

    func resume() {
        guard paused else { return }
        paused = false
        arm(configuration.readTimeout)
        stream?.resumeReading()
    }

    private func timedOut() {
        // Waiting for our own consumer is not the origin's silence.
        if paused && state == .busy { return arm(configuration.readTimeout) }
        switch state {
        case .connecting: fail(.timeout("connecting to \(label) took over \(configuration.connectTimeout) ms"))
        case .busy: fail(.timeout("no data from \(label) for \(configuration.readTimeout) ms"))
        case .idle: close()
        case .closed: break
        }
    }

    private func fail(_ error: UpstreamError) {
        let task = self.task
        self.task = nil
        let wasConnecting = state == .connecting
        close()
        guard let task else { return }
        if wasConnecting {
            client?.connectionFailed(self, task: task, error: error)
        } else {
            client?.exchangeFailed(self, task: task, error: error, retryable: wasUsed && !receivedAny)
        }
    }

    /// The response ended: back to the pool when reusable, then the task learns of it.
    private func complete() {
        let task = self.task
        self.task = nil
        wasUsed = true
        let reusable = head?.keepAlive ?? false
        if paused {
            // The last bytes came in the chunk that paused it: pooled connections read.
            paused = false
            stream?.resumeReading()
        }
        if case .untilClose = framing { close() } else if !reusable { close() }
        if state != .closed {
            // Still reading while idle: an origin closing the connection is seen at once.
            state = .idle
            arm(configuration.idleTimeout)
            client?.release(self)
        }
        task?.exchangeDidComplete()
    }

    // MARK: UpstreamStreamDelegate

    func streamDidConnect(_ error: UpstreamError?) {
        if let error { return fail(error) }
        guard let task else { close(); return }
        state = .idle
        run(task)
    }

    func streamDidRead(_ bytes: UnsafeRawBufferPointer) {
        guard state == .busy, task != nil else {
            close()  // bytes on an idle connection: the origin is confused; drop it
            return
        }
        receivedAny = true
        arm(configuration.readTimeout)
        if head == nil {
            headBuffer.append(contentsOf: bytes)
            parseHead()
        } else {
            consumeBody(bytes)
        }
    }

    private func parseHead() {
        while head == nil {
            let parsed = headBuffer.withUnsafeBytes { ResponseHeadParser.parse($0) }
            switch parsed {
            case .failure(let error):
                fail(.protocolViolation("\(label): \(error)"))
                return
            case .success(nil):
                return
            case .success(let (parsedHead, consumed)?):
                headBuffer.removeFirst(consumed)
                if (100..<200).contains(parsedHead.status) { continue }  // interim response
                do {
                    framing = try BodyFraming(for: parsedHead, requestMethod: task?.method ?? "GET")
                } catch {
                    fail(error)
                    return
                }
                head = parsedHead
                deliversBody = task?.didReceiveHead(parsedHead) ?? false
                guard state == .busy, task != nil, !(task?.isFinished ?? true) else { return }
                let rest = headBuffer
                headBuffer = []
                if case .none = framing {
                    if !rest.isEmpty { fail(.protocolViolation("\(label): bytes after a body-less response")); return }
                    complete()
                    return
                }
                if !rest.isEmpty { rest.withUnsafeBytes { consumeBody($0) } }
            }
        }
    }

    private func deliver(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        if deliversBody {
            task?.delegate?.upstreamDidReceiveBody(bytes)
        } else {
            task?.didSkipBody(bytes.count)
        }
    }

    private func consumeBody(_ bytes: UnsafeRawBufferPointer) {
        switch framing {
        case .none:
            fail(.protocolViolation("\(label): unexpected body bytes"))
        case .untilClose:
            deliver(bytes)
        case .length(let remaining):
            // Checked before delivering anything: the bytes of a response that
            // overruns its own length are not trusted.
            guard Int64(bytes.count) <= remaining else {
                return fail(.protocolViolation("\(label): more body bytes than Content-Length"))
            }
            framing = .length(remaining: remaining - Int64(bytes.count))
            deliver(bytes)
            if remaining == Int64(bytes.count) {
                // Nobody else can take a busy connection, even if the task let go of it.
                if state == .busy { complete() }
            }
        case .chunked(var decoder):
            do {
                let (consumed, done) = try decoder.feed(bytes) { data in deliver(data) }
                framing = .chunked(decoder)
                guard state == .busy, task != nil else { return }
                if done {
                    if consumed < bytes.count {
                        fail(.protocolViolation("\(label): bytes after the last chunk"))
                    } else {
                        complete()
                    }
                }
            } catch {
                fail(.protocolViolation("\(label): bad chunked body (\(error))"))
            }
        }
    }

    func streamDidReachEOF() {
        if state == .busy, head != nil, case .untilClose = framing {
            complete()
        } else if state == .busy || state == .connecting {
            // (.connecting cannot see EOF today: streams report it only once ready.)
            fail(.closedEarly(head == nil ? "\(label) closed before a response" : "\(label) closed mid-body"))
        } else {
            close()
        }
    }

    func streamDidClose(_ error: UpstreamError?) {
        stream = nil
        if state != .closed {
            fail(error ?? .closedEarly("\(label) closed"))
        }
        state = .closed
        timer?.cancel()
        timer = nil
        client?.forget(self)
    }
}
