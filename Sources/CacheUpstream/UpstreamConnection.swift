import CacheHTTP
import CacheIO

/// One keep-alive connection to an origin, running one exchange at a time.
/// Loop thread only. The socket keeps this object alive until it closes.
final class UpstreamConnection: SocketDelegate {
    enum State { case connecting, idle, busy, closed }

    let poolKey: String
    let label: String
    private let loop: EventLoop
    private let configuration: UpstreamConfiguration
    private weak var client: UpstreamClient?
    private var socket: Socket?
    private var timer: LoopTimer?
    private(set) var state: State = .connecting
    private(set) var task: UpstreamTask?
    /// True once an exchange has completed on it (it is a reused connection).
    private(set) var wasUsed = false

    private var headBuffer: [UInt8] = []
    private var head: HTTPResponseHead?
    private var framing: BodyFraming = .none
    private var receivedAny = false

    init(poolKey: String, label: String, loop: EventLoop, configuration: UpstreamConfiguration, client: UpstreamClient) {
        self.poolKey = poolKey
        self.label = label
        self.loop = loop
        self.configuration = configuration
        self.client = client
    }

    func connect(to address: SocketAddress, for task: UpstreamTask) {
        self.task = task
        state = .connecting
        do {
            socket = try Socket.connect(on: loop, to: address, delegate: self)
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
        socket?.write(task.request)
        socket?.startReading()
        arm(configuration.readTimeout)
    }

    /// Drops the connection mid-exchange (the task was cancelled).
    func abandon() {
        task = nil
        close()
    }

    func close() {
        guard state != .closed else { return }
        state = .closed
        timer?.cancel()
        timer = nil
        socket?.close()
    }

    private func arm(_ milliseconds: UInt64) {
        if let timer {
            timer.reset(milliseconds: milliseconds)
        } else {
            timer = LoopTimer(on: loop, after: milliseconds) { [weak self] in self?.timedOut() }
        }
    }

    private func timedOut() {
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

    private func complete() {
        guard let task else { return }
        self.task = nil
        wasUsed = true
        let reusable = head?.keepAlive ?? false
        if case .untilClose = framing { close() } else if !reusable { close() }
        if state != .closed {
            state = .idle
            socket?.stopReading()
            arm(configuration.idleTimeout)
        }
        task.finish(nil)
        if state == .idle { client?.release(self) }
    }

    // MARK: SocketDelegate

    func socketDidConnect(_ socket: Socket, error: IOError?) {
        if let error {
            fail(.connect("\(label): \(error)"))
            return
        }
        guard let task else { close(); return }
        state = .idle
        run(task)
    }

    func socketDidRead(_ socket: Socket, _ bytes: UnsafeRawBufferPointer) {
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
                task?.delegate?.upstreamDidReceiveHead(parsedHead)
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

    private func consumeBody(_ bytes: UnsafeRawBufferPointer) {
        switch framing {
        case .none:
            fail(.protocolViolation("\(label): unexpected body bytes"))
        case .untilClose:
            task?.delegate?.upstreamDidReceiveBody(bytes)
        case .length(let remaining):
            let take = Int(min(Int64(bytes.count), remaining))
            framing = .length(remaining: remaining - Int64(take))
            task?.delegate?.upstreamDidReceiveBody(UnsafeRawBufferPointer(rebasing: bytes[0..<take]))
            guard state == .busy, task != nil else { return }
            if take < bytes.count {
                fail(.protocolViolation("\(label): more body bytes than Content-Length"))
            } else if remaining - Int64(take) == 0 {
                complete()
            }
        case .chunked(var decoder):
            do {
                let (consumed, done) = try decoder.feed(bytes) { data in
                    task?.delegate?.upstreamDidReceiveBody(data)
                }
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

    func socketDidReachEOF(_ socket: Socket) {
        if state == .busy, head != nil, case .untilClose = framing {
            complete()
        } else if state == .busy {
            fail(.closedEarly(head == nil ? "\(label) closed before a response" : "\(label) closed mid-body"))
        } else {
            close()
        }
    }

    func socketDidClose(_ socket: Socket, error: IOError?) {
        self.socket = nil
        if state != .closed {
            if let error { fail(.closedEarly("\(label): \(error)")) } else { fail(.closedEarly("\(label) closed")) }
        }
        state = .closed
        timer?.cancel()
        timer = nil
        client?.forget(self)
    }
}
