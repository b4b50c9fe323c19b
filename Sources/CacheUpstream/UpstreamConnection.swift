import CacheHTTP
import CacheIO

/// One keep-alive connection to an origin, one exchange at a time; loop thread only, kept alive by its stream
/// until it closes. Drives the state machine: events raised while acting (cancel, pause, redirect, close) are
/// queued and fed after the current list, never re-entrantly. A resumed TLS stream hands over decrypted bytes
/// inside the call, so it resumes only once the queue is empty (fed in place, not copied).
final class UpstreamConnection: UpstreamStreamDelegate {
    private typealias Machine = UpstreamConnectionStateMachine

    /// Events waiting while an action list is being performed.
    private enum Event {
        case connect(request: [UInt8], method: String)
        case connected(UpstreamError?)
        case start(request: [UInt8], method: String)
        /// Bytes that arrived while acting, copied (the stream's buffer goes): a safety net.
        case read([UInt8])
        case eof
        case timerFired
        case pause, resume, abandon, close
        case closed(UpstreamError?)
    }

    let poolKey: String
    let label: String
    private let loop: EventLoop
    private let configuration: UpstreamConfiguration
    private weak var client: UpstreamClient?
    private var stream: UpstreamStream?
    private var timer: LoopTimer?
    private var machine: Machine
    /// The task of the running exchange; nil once it let go.
    private(set) var task: UpstreamTask?

    /// Reused between events so that reading allocates nothing.
    private var actions: [Machine.Action] = []
    private var queue: [Event] = []
    /// True while events are being fed and actions performed.
    private var running = false
    /// The task's answer to the head just delivered.
    private var headVerdict: Bool?
    /// The stream is to resume reading once the queue is empty.
    private var resumeStream = false

    init(poolKey: String, label: String, loop: EventLoop, configuration: UpstreamConfiguration, client: UpstreamClient) {
        self.poolKey = poolKey
        self.label = label
        self.loop = loop
        self.configuration = configuration
        self.client = client
        machine = Machine(label: label, connectTimeout: configuration.connectTimeout,
                          readTimeout: configuration.readTimeout)
        actions.reserveCapacity(8)
    }

    /// Ready for an exchange (the pool hands out only idle connections).
    var isIdle: Bool { machine.isIdle }

    /// Connects (through a parent's tunnel with `tunnelRequest`, TLS over `tls`); the task runs once ready.
    func connect(to address: SocketAddress, tls: TLSSession?, tunnelRequest: [UInt8]?, for task: UpstreamTask) {
        self.task = task
        handle(.connect(request: task.request, method: task.method))
        do {
            stream = try UpstreamStream.connect(on: loop, to: address, tls: tls, label: label,
                                                tunnelRequest: tunnelRequest, delegate: self)
        } catch {
            // No stream, so no close will be reported: report it here.
            streamDidClose(.connect("\(label): \(error)"))
        }
    }

    /// Starts an exchange on a connected, idle connection.
    func run(_ task: UpstreamTask) {
        self.task = task
        task.connection = self
        handle(.start(request: task.request, method: task.method))
    }

    /// The task was cancelled or moves on; after its body's last byte the connection stays reusable.
    func abandon() {
        task = nil
        handle(.abandon)
    }

    func close() { handle(.close) }
    /// Backpressure: stop reading the body until `resume()`.
    func pause() { handle(.pause) }
    func resume() { handle(.resume) }

    func streamDidConnect(_ error: UpstreamError?) { handle(.connected(error)) }

    func streamDidRead(_ bytes: UnsafeRawBufferPointer) {
        guard !running else { return handle(.read(Array(bytes))) }
        run { read(bytes) }
    }

    func streamDidReachEOF() { handle(.eof) }

    func streamDidClose(_ error: UpstreamError?) {
        stream = nil
        handle(.closed(error))
    }

    private func handle(_ event: Event) {
        queue.append(event)
        guard !running else { return }
        run {}
    }

    /// Runs `body`, then every event it queued; then resumes the stream if asked.
    private func run(_ body: () -> Void) {
        running = true
        body()
        while !queue.isEmpty { apply(queue.removeFirst()) }
        running = false
        if resumeStream {
            // Bytes the stream hands over now are fed in place, on a fresh run.
            resumeStream = false
            if !machine.isClosed { stream?.resumeReading() }
        }
    }

    private func apply(_ event: Event) {
        switch event {
        case .connect(let request, let method): machine.connect(request: request, method: method, into: &actions)
        case .connected(let error): machine.connected(error: error, into: &actions)
        case .start(let request, let method): machine.start(request: request, method: method, into: &actions)
        case .read(let bytes): return bytes.withUnsafeBytes { read($0) }
        case .eof: machine.eof(into: &actions)
        case .timerFired: machine.timerFired(into: &actions)
        case .pause: machine.pause(into: &actions)
        case .resume: machine.resume(into: &actions)
        case .abandon: machine.abandon(into: &actions)
        case .close: machine.close(into: &actions)
        case .closed(let error):
            machine.closed(error: error, into: &actions)
            perform(input: nil)
            client?.forget(self)
            return
        }
        perform(input: nil)
    }

    /// Feeds one read; after a head, the rest waits for the task's verdict.
    private func read(_ bytes: UnsafeRawBufferPointer) {
        var rest = bytes
        while true {
            let consumed = machine.bytesRead(rest, into: &actions)
            perform(input: rest)
            if let verdict = headVerdict {
                headVerdict = nil
                machine.headAccepted(deliversBody: verdict, into: &actions)
                perform(input: nil)
            }
            guard consumed > 0, consumed < rest.count else { return }
            rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
        }
    }

    /// Performs the pending actions in order; `input` is the buffer body ranges refer to.
    private func perform(input: UnsafeRawBufferPointer?) {
        // Indexed, not iterated: the list stays in place and keeps its capacity.
        var index = 0
        while index < actions.count {
            let action = actions[index]
            index += 1
            switch action {
            case .write(let bytes):
                stream?.write(bytes)
            case .startReading:
                stream?.startReading()
            case .pauseReading:
                resumeStream = false
                stream?.pauseReading()
            case .resumeReading:
                resumeStream = true
            case .armTimer(let kind):
                arm(kind)
            case .deliverInterim(let head):
                task?.delegate?.upstreamDidReceiveInterim(head)
            case .deliverHead(let head):
                headVerdict = task?.didReceiveHead(head) ?? false
            case .deliverBody(let range):
                if let input { task?.delegate?.upstreamDidReceiveBody(UnsafeRawBufferPointer(rebasing: input[range])) }
            case .skipBody(let count):
                task?.didSkipBody(count)
            case .complete(let reusable):
                let task = takeTask()
                // Pooled first: a redirect to the same origin may take this connection.
                if reusable { client?.release(self) }
                task?.exchangeDidComplete()
            case .connectFailed(let error):
                guard let task = takeTask() else { break }
                client?.connectionFailed(self, task: task, error: error)
            case .exchangeFailed(let error, let retryable):
                guard let task = takeTask() else { break }
                client?.exchangeFailed(self, task: task, error: error, retryable: retryable)
            case .close:
                timer?.cancel()
                timer = nil
                stream?.close()
            }
        }
        actions.removeAll(keepingCapacity: true)
    }

    private func takeTask() -> UpstreamTask? {
        defer { task = nil }
        return task
    }

    private func arm(_ kind: Machine.Timer) {
        let milliseconds = switch kind {
        case .connect: configuration.connectTimeout
        case .read: configuration.readTimeout
        case .idle: configuration.idleTimeout
        }
        if let timer {
            timer.reset(milliseconds: milliseconds)
        } else {
            timer = LoopTimer(on: loop, after: milliseconds) { [weak self] in self?.handle(.timerFired) }
        }
    }
}
