import CacheHTTP
import CacheStorage
import CacheUpstream
import Logging

/// Drives one origin request filling a byte range of a data file: `DownloadStateMachine` decides, this class
/// stores the bytes, wakes readers and steers the upstream task. A byte is written before readers are woken,
/// so they send only bytes in the file. Loop thread only.
final class Download: UpstreamResponseDelegate {
    typealias Request = DownloadStateMachine.Request

    let id: Int
    let state: ResourceState
    private unowned let loader: Loader
    private var machine: DownloadStateMachine
    var task: UpstreamTask?
    /// Readers that want this download's bytes; at zero it is cancelled.
    var interest = 0
    private var errorHead: HTTPResponseHead?
    private var errorBody: [UInt8] = []
    /// The client request this download serves, for the storing rules (RFC 9111 §3).
    let clientHeaders: HTTPHeaders
    /// When the request was sent (RFC 9111 §4.2.3 request_time), in seconds.
    let requestTime: Int64
    /// Forward and reverse modes: any storable status and `--cache-types` are kept.
    let transparent: Bool
    /// Started by a background reader (a download or preload): paced by `Loader.pacer`.
    let background: Bool

    init(id: Int, state: ResourceState, request: Request, loader: Loader, clientHeaders: HTTPHeaders = HTTPHeaders(),
         transparent: Bool = false, background: Bool = false) {
        self.id = id
        self.transparent = transparent
        self.background = background
        self.state = state
        self.loader = loader
        self.clientHeaders = clientHeaders
        requestTime = loader.nowSeconds
        machine = DownloadStateMachine(request: request, knownTotal: state.resource.totalLength)
    }

    var request: Request { machine.request }
    var position: Int64 { machine.position ?? 0 }
    /// Where the download stops (exclusive); nil while unknown.
    var end: Int64? { machine.end }
    /// True once the response head was accepted (position and end are real).
    var ready: Bool { machine.isReady }
    var finished: Bool { machine.isFinished }
    var failure: LoadError? { machine.failure }
    var hasWrittenAll: Bool { machine.hasStoredAll }
    var rangeHeader: String { machine.rangeHeader(knownTotal: state.resource.totalLength) }

    var isProbe: Bool { if case .probe = request { true } else { false } }
    var isValidation: Bool { request == .validation }
    /// The status the origin answered this request with; nil until it did.
    private(set) var responseStatus: Int?

    func truncate(at offset: Int64) { machine.truncate(at: offset) }

    /// 1xx: not part of the resource, not stored; readers waiting for the head relay it.
    func upstreamDidReceiveInterim(_ head: HTTPResponseHead) {
        for reader in Array(state.waiting.values) { reader.interim(head, from: self) }
    }

    func upstreamDidReceiveHead(_ head: HTTPResponseHead) {
        let resource = state.resource
        let known = state.headKnown
            ? DownloadStateMachine.Known(totalLength: resource.totalLength, etag: resource.metadata.etag,
                                         lastModified: resource.metadata.lastModified,
                                         status: loader.storedHead(resource).status)
            : nil
        responseStatus = head.status
        // Another status than 200/206 is kept when storable (a stored 404 validated by a 404).
        let storesStatus = transparent && head.status != 200 && head.status != 206
            && (isProbe || isValidation) && loader.mayStore(head, request: clientHeaders)
        let actions = machine.head(head, known: known, storesStatus: storesStatus, storesAnyStatus: transparent)
        // Every request carries Range: a 206 shows ranges are served, a 200 of the same
        // version that they are not (If-Range explains a 200 only for a new version).
        if head.status == 206 {
            state.rangesSupported = true
        } else if head.status == 200, !actions.contains(where: { if case .versionChanged = $0 { true } else { false } }) {
            state.rangesSupported = false
        }
        for action in actions {
            switch action {
            case .adopt(let totalLength):
                resource.setInfo(totalLength: totalLength, contentType: head.headers["content-type"],
                                 etag: head.headers["etag"], lastModified: head.headers["last-modified"])
                loader.adoptHead(state, response: head, request: clientHeaders, requestTime: requestTime)
                state.headKnown = true
                resource.validatedAt = loader.store.clock()
                loader.classify(state, transparent: transparent)
            case .confirmed:
                resource.validatedAt = loader.store.clock()
                if isValidation { loader.refreshHead(state, with: head, requestTime: requestTime) }
            case .notModified:
                loader.refreshHead(state, with: head, requestTime: requestTime)
                resource.validatedAt = loader.store.clock()
            case .versionChanged(let reason):
                loader.versionChanged(state, reason: reason, except: self)
            case .collectErrorBody:
                errorHead = head
            case .stopTask:
                task?.cancel()
            case .wakeReaders:
                state.wakeReaders()
            case .finish:
                ended()
            }
        }
    }

    func upstreamDidReceiveBody(_ bytes: UnsafeRawBufferPointer) {
        if machine.isReady { loader.received(bytes.count) }
        let resource = state.resource
        let keeping = DownloadStateMachine.Keeping(isTransient: resource.isTransient, totalLength: resource.totalLength,
                                                   maxBytes: loader.store.maxBytes)
        switch machine.body(count: bytes.count, keeping: keeping) {
        case .collect(let count):
            errorBody.append(contentsOf: bytes.prefix(count))
        case .ignore:
            break
        case .pass(let count, let offset):
            push(UnsafeRawBufferPointer(rebasing: bytes[0..<count]), at: offset)
        case .stopKeeping(let count, let offset, let tooLarge):
            if tooLarge { loader.tooLargeToKeep(state, at: offset + Int64(count)) }
            // Not kept: the origin is paced to the readers' queues, so a client that does
            // not read cannot make the proxy download without end.
            passOn(UnsafeRawBufferPointer(rebasing: bytes[0..<count]), from: offset)
        case .store(let count, let offset):
            let chunk = UnsafeRawBufferPointer(rebasing: bytes[0..<count])
            do {
                try resource.write(chunk, at: offset)
            } catch {
                switch machine.storeFailed(isFault: error.isStorageFault, error.description) {
                case .fail:
                    task?.cancel()
                    return ended()
                case .passThrough:
                    loader.store.noteStorageFault(error)
                    return passOn(chunk, from: offset)
                }
            }
            state.wakeReaders()
            loader.store.refillSpares()  // after the readers: off the first byte's path
            if end == nil { paceToReaders() }
            if background { loader.pacer.received(count, by: self) }
        }
        if machine.shouldStopEarly, task?.isFinished == false { cancel() }
    }

    func upstreamDidFinish(_ error: UpstreamError?) {
        switch machine.responseEnded(error: error.map { .upstream($0) }, errorHead: errorHead, errorBody: errorBody) {
        case .completedWithLength(let length)?:
            let metadata = state.resource.metadata
            state.resource.setInfo(totalLength: length, contentType: metadata.contentType,
                                   etag: metadata.etag, lastModified: metadata.lastModified)
            fallthrough
        case .completed?:
            // An empty body (204, empty 200) writes no byte: its empty file is made so the index lists it.
            let resource = state.resource
            if resource.totalLength == 0, !resource.isTransient, !isPassThrough {
                _ = try? resource.dataFile()
            }
            ended()
        case .failed?:
            ended()
        case nil:
            break
        }
    }

    /// Readers fed straight from this download; nothing is written to the file.
    private(set) var followers: [ResourceReader] = []
    /// The machine's: bytes go to `followers`, never to the file.
    var isPassThrough: Bool { machine.isPassingThrough }
    private var paused = false
    /// It paused for a follower once (logged once: a slow client pauses it at every turn).
    private var pausedBefore = false

    /// From now on bytes go to `readers` instead of the data file.
    func passThrough(to readers: [ResourceReader]) {
        machine.passThrough()
        follow(readers)
    }

    private func follow(_ readers: [ResourceReader]) {
        followers = readers
        for reader in readers { reader.follow(self) }
    }

    /// The bytes are no longer kept (disk full, or not kept): readers waiting for exactly
    /// the next byte follow and get `bytes`; the others replan.
    private func passOn(_ bytes: UnsafeRawBufferPointer, from next: Int64) {
        follow(state.waiting.values.filter { $0.isWaiting(for: self, at: next) })
        if followers.isEmpty { cancel() }
        state.wakeReaders()
        if !finished { push(bytes, at: next) }
    }

    private func push(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        var full = false
        for reader in followers where !reader.receive(bytes, at: offset) { full = true }
        if full && !paused {
            paused = true
            task?.pause()
            if !pausedBefore { loader.logger.debug("download paused: a client reads slower", metadata: ["url": "\(state.resource.url)"]) }
            pausedBefore = true
        }
    }

    /// A follower's socket drained: go on once none is full.
    func followerDrained() {
        guard paused else { return }
        paused = false
        if !isHeld { task?.resume() }
    }

    func unfollow(_ reader: ResourceReader) {
        followers.removeAll { $0 === reader }
        if isPassThrough && followers.isEmpty { cancel() } else { followerDrained() }
    }

    /// Bytes a body of unknown length may be stored ahead of its furthest reader: an
    /// endless origin and an idle client leave at most this on disk.
    static let paceWindow: Int64 = 8 << 20
    private(set) var isWaitingForReaders = false

    private func paceToReaders() {
        guard !isWaitingForReaders, position - state.readHorizon > Self.paceWindow else { return }
        isWaitingForReaders = true
        task?.pause()
        loader.logger.debug("download paused: its readers are behind", metadata: ["url": "\(state.resource.url)"])
    }

    /// A reader took more bytes: go on once within half the window.
    func readersAdvanced() {
        guard isWaitingForReaders, position - state.readHorizon <= Self.paceWindow / 2 else { return }
        isWaitingForReaders = false
        if !isHeld { task?.resume() }
    }

    /// Held back by the pacer (rate cap, playback first).
    private(set) var isHeld = false

    func setHeld(_ on: Bool) {
        guard on != isHeld else { return }
        isHeld = on
        if on {
            task?.pause()
        } else if !paused && !isWaitingForReaders {
            task?.resume()
        }
    }

    /// Stops the download because nobody wants its bytes any more.
    func cancel() {
        task?.cancel()
        if machine.stop(nil) { ended() }
    }

    /// The machine reached `finished`: tell the loader once.
    private func ended() {
        task = nil
        loader.downloadFinished(self)
    }
}
