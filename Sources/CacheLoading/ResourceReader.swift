import CacheHTTP
import CacheStorage

/// What a reader reports; calls arrive on the loop thread.
package protocol ResourceReaderDelegate: AnyObject {
    /// The resource's head is known (or could not be had).
    func readerHeadReady(_ reader: ResourceReader, _ result: Result<ContentInfo, LoadError>)
    /// More bytes may be available: call `next()` again.
    func readerCanContinue(_ reader: ResourceReader)
    /// Body bytes passed straight through (disk full), valid during the call. False: the
    /// client is not keeping up, the download pauses until `resumeFollowing()`.
    func readerReceived(_ reader: ResourceReader, _ bytes: UnsafeRawBufferPointer) -> Bool
    /// An interim (1xx) response of the exchange the head waits for (RFC 9110 §15.2): relayed, not stored.
    func readerReceivedInterim(_ reader: ResourceReader, _ head: HTTPResponseHead)
}

extension ResourceReaderDelegate {
    package func readerReceivedInterim(_ reader: ResourceReader, _ head: HTTPResponseHead) {}
}

/// A piece of the response body.
package enum ReadChunk {
    /// Bytes in the data file, ready for sendfile.
    case file(DataFile, Range<Int64>)
    /// Nothing yet; `readerCanContinue` follows.
    case pending
    case finished
    case failed(LoadError)
}

/// Serves one client request of one resource: its head, then the chosen range's bytes as
/// they land in the data file. Loop thread only; `close()` releases everything it holds.
package final class ResourceReader {
    enum Phase { case head, body, closed }

    private unowned let loader: Loader
    let state: ResourceState
    private let spec: ByteRangeSpec?
    /// Client fields for the origin, sent with the downloads this reader starts.
    private let fields: OriginFields
    package weak var delegate: ResourceReaderDelegate?
    // Loop-confined, never accessed overlapping: no dynamic exclusivity check (a share of every hit).
    @exclusivity(unchecked) private var phase: Phase = .head
    @exclusivity(unchecked) private var position: Int64 = 0
    @exclusivity(unchecked) private var end: Int64 = 0
    private var interests: [Download] = []
    /// The download expected to write the byte at `position`.
    private var awaited: Download?
    /// A download passing its bytes straight to this reader.
    private var following: Download?
    /// The resource version this reader serves (see `Resource.generation`).
    private var generation = 0
    /// Set once the head was restarted after a version change (at most once).
    private var restarted = false

    /// The client's request fields, for the cache rules (freshness, storing).
    private let request: HTTPHeaders
    /// False in forward and reverse proxy modes: redirects are relayed, not followed.
    package var followsRedirects = true
    /// A request of the forward or reverse mode (its freshness policy).
    private var transparent: Bool { !followsRedirects }
    /// A preload's reader: it yields to readers serving clients.
    let background: Bool
    /// Why the head needed the origin, for Cache-Status (RFC 9211); nil: stored answer.
    package private(set) var forwardReason: CacheStatusField.Forward?
    /// The head came from another request's origin exchange, joined.
    package private(set) var collapsed = false
    /// Another variant (Vary) of the URL is stored: a miss is a vary-miss.
    var otherVariantStored = false
    /// The origin's status for the request the head waited for (RFC 9211 fwd-status).
    package private(set) var forwardStatus: Int?
    /// The origin could not confirm the stored response; served stale (RFC 9111 §4.2.4).
    package private(set) var servedStale = false

    init(loader: Loader, state: ResourceState, spec: ByteRangeSpec?, fields: OriginFields, background: Bool = false,
         request: HTTPHeaders = HTTPHeaders()) {
        self.loader = loader
        self.background = background
        self.state = state
        self.spec = spec
        self.fields = fields
        self.request = request
    }

    package var resource: Resource { state.resource }
    /// The loop's memo of gzip bodies that could not be inflated (`BodySource`).
    var inflateMemo: InflateMemo { loader.inflateMemo }

    /// Whether the origin serves byte ranges, once it answered a request (nil before).
    package var rangesSupported: Bool? { state.rangesSupported }

    /// The head is reported at once when known, else after the origin answers.
    package func start() {
        if state.headKnown {
            // Freshness is decided once, before planning (RFC 9111 §4); a live playlist
            // past its window is checked whatever it says.
            let action: ReuseAction = state.validation != nil
                ? .revalidate(byRequest: loader.isFresh(state, transparent: transparent))
                : loader.needsValidation(state) ? .revalidate(byRequest: false)
                : loader.reuse(state, request: request, transparent: transparent)
            switch action {
            case .serve:
                break
            case .serveAndRevalidate:
                _ = loader.validation(for: state, headers: fields.headers, request: request,
                                      followsRedirects: followsRedirects)
            case .revalidate(let byRequest):
                forwardReason = byRequest ? .request : .stale
                collapsed = state.validation != nil
                join(loader.validation(for: state, headers: fields.headers, request: request,
                                       followsRedirects: followsRedirects), awaiting: true)
                wait()
                return
            case .refuse:
                delegate?.readerHeadReady(self, .failure(.notCached("only-if-cached, and the stored response is stale")))
                return
            }
            delegate?.readerHeadReady(self, .success(loader.contentInfo(state, transparent: transparent)))
            return
        }
        // After a revalidation replaced the stored response, the first reason stays.
        if forwardReason == nil { forwardReason = otherVariantStored ? .varyMiss : .uriMiss }
        guard Freshness.mayForwardMiss(requestHeaders: request) else {
            delegate?.readerHeadReady(self, .failure(.notCached("only-if-cached, and nothing is stored")))
            return
        }
        let existing = state.probe
        if existing != nil { collapsed = true }
        let probe = existing ?? startDownload(.probe(spec ?? .from(first: 0)))
        join(probe, awaiting: true)
        if existing == nil && !loader.store.isWritable() { probe.passThrough(to: [self]) }
        wait()
    }

    /// The body range to send (Range resolved); upper bound Int64.max: to the end.
    package func deliver(_ range: Range<Int64>) {
        guard phase == .head else { return }
        phase = .body
        position = range.lowerBound
        end = range.upperBound
        generation = state.resource.generation
    }

    package var offset: Int64 { position }

    /// The next piece of the body.
    package func next() -> ReadChunk {
        guard phase == .body else { return .finished }
        if state.resource.generation != generation {
            return .failed(.changed("while this response was being sent"))
        }
        if let total = state.resource.totalLength, end > total { end = total }
        if position >= end { return .finished }
        if let following {
            if !following.finished {
                wait()
                return .pending
            }
            self.following = nil
            if position < end, let failure = following.failure { return .failed(failure) }
            if position >= end { return .finished }
        }
        let resource = state.resource
        if let run = resource.available.run(containing: position) {
            let stop = min(run.upperBound, end)
            let file: DataFile
            do { file = try resource.dataFile() } catch {
                guard error.isStorageFault else { return .failed(.storage(error.description)) }
                // The file is gone or unreadable: fetch its bytes again, passed through.
                loader.store.noteStorageFault(error)
                resource.lostData()
                ensureCoverage()
                wait()
                return .pending
            }
            let chunk = ReadChunk.file(file, position..<stop)
            position = stop
            if stop > state.readHorizon { state.readerReached(stop) }
            if position < end && !resource.available.contains(position) { ensureCoverage() }  // one gap ahead
            return chunk
        }
        if let awaited, awaited.finished, let failure = awaited.failure {
            return .failed(failure)
        }
        ensureCoverage()
        wait()
        return .pending
    }

    /// Makes sure the first missing stretch at or after `position` is being fetched.
    private func ensureCoverage() {
        interests.removeAll { download in
            let done = download.finished || (download.end.map { $0 <= position } ?? false)
            if done { loader.leave(download) }
            return done
        }
        // An origin ignoring Range sends every body from its start: a download behind
        // the position is still the only way to its bytes.
        let window = state.rangesSupported == false ? Int64.max : SlicePlanner.defaultJoinWindow
        let steps = SlicePlanner.plan(position..<end, available: state.resource.available, inFlight: state.inFlight,
                                      joinWindow: window)
        for step in steps {
            switch step {
            case .cached:
                continue
            case .await(let range, let id):
                guard let download = state.download(id: id) else { return }
                return join(download, awaiting: range.contains(position))
            case .fetch(let range) where !loader.store.isWritable() || state.resource.isTransient:
                // Storage failing or resource not kept: fetch what is needed now, to this reader.
                guard range.lowerBound == position else { return }
                let download = startDownload(.range(range))
                join(download, awaiting: true)
                return download.passThrough(to: [self])
            case .fetch(let range):
                let toEnd = range.upperBound >= (state.resource.totalLength ?? Int64.max)
                return join(startDownload(.range(toEnd ? range.lowerBound..<Int64.max : range)),
                            awaiting: range.contains(position))
            }
        }
    }

    /// A download for this reader's client: its fields, cache rules, redirects and priority.
    private func startDownload(_ request: Download.Request) -> Download {
        loader.startDownload(state, request, headers: fields.headers, request: self.request,
                             followsRedirects: followsRedirects, background: background)
    }

    /// Counts this reader among `download`'s; `awaiting`: it brings the byte at `position`.
    private func join(_ download: Download, awaiting: Bool = false) {
        if awaiting { awaited = download }
        guard !interests.contains(where: { $0 === download }) else { return }
        interests.append(download)
        download.interest += 1
    }

    private func wait() { state.waiting[ObjectIdentifier(self)] = self }

    /// Passed on while this reader's head waits for that very download.
    func interim(_ head: HTTPResponseHead, from download: Download) {
        guard phase == .head, awaited === download else { return }
        delegate?.readerReceivedInterim(self, head)
    }

    /// Called by the resource state when bytes landed or downloads changed.
    func resourceChanged() {
        switch phase {
        case .closed:
            return
        case .head:
            if state.headKnown && state.validation == nil {
                if let awaited, awaited.isValidation, let failure = awaited.failure,
                   !loader.mayServeStale(state, request: request, failure: failure, transparent: transparent) {
                    // Not confirmed, and the response forbids serving it stale (RFC 9111 §4.2.4).
                    let error = if case .originStatus = failure { failure } else {
                        LoadError.notCached("revalidation failed: \(failure)")
                    }
                    delegate?.readerHeadReady(self, .failure(error))
                    return
                }
                // Validated, or the check failed and serving stale is allowed.
                forwardStatus = awaited?.responseStatus
                if let awaited, awaited.isValidation, awaited.failure != nil { servedStale = true }
                delegate?.readerHeadReady(self, .success(loader.contentInfo(state, transparent: transparent)))
            } else if let awaited, awaited.finished, !state.headKnown {
                let changed = if case .changed? = awaited.failure { true } else { false }
                if (changed || awaited.isValidation) && !restarted {
                    // A new version (or a failed check): fetch its head instead of failing the client.
                    restarted = true
                    self.awaited = nil
                    start()
                } else {
                    delegate?.readerHeadReady(self, .failure(awaited.failure ?? .mismatch("origin gave no response")))
                }
            } else {
                wait()
            }
        case .body:
            delegate?.readerCanContinue(self)
        }
    }

    func follow(_ download: Download) {
        following = download
        join(download)
    }

    /// True when this reader waits for exactly the byte `download` gets next.
    func isWaiting(for download: Download, at offset: Int64) -> Bool {
        phase == .body && awaited === download && position == offset && following == nil
    }

    /// Bytes at `offset` from the followed download; false when the client is full.
    func receive(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Bool {
        guard phase == .body, let delegate else { return true }
        let from = max(offset, position)
        let to = min(offset + Int64(bytes.count), end)
        // Bytes before our position (an origin that ignored Range) are skipped.
        guard from == position, from < to else { return true }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[Int(from - offset)..<Int(to - offset)])
        position = to
        let keepGoing = delegate.readerReceived(self, slice)
        if position >= end { delegate.readerCanContinue(self) }
        return keepGoing
    }

    /// This second's answer to a plain request (no Cache-Control nor Pragma) when it is the stored response
    /// from a complete data file, which another loop may give by itself (`PlainHit`); nil when anything needs
    /// this loop (validation, partial, transient, varying, encoded, unshared, live). An encrypted file
    /// qualifies (each loop decrypts with its own context, cs_conn_send_xts). Call before `start()`.
    package func plainHit() -> PlainHit? {
        let resource = state.resource
        let epoch = loader.store.epoch.current
        let second = loader.nowSeconds
        guard phase == .head, state.headKnown, state.validation == nil, !state.notShared,
              !resource.isTransient, !resource.isRemoved, resource.metadata.head != nil,
              let total = resource.totalLength, total > 0, resource.isComplete,
              let variance = resource.derived.variance, !variance.varies, variance.coding == nil,
              loader.liveReuseMilliseconds(state) == nil,
              loader.reuse(state, request: HTTPHeaders()) == .serve,
              let file = try? resource.dataFile() else { return nil }
        let info = loader.contentInfo(state)
        // The transparent modes' stricter freshness may not serve it: they go to the owner.
        let transparentTTL = loader.reuse(state, request: HTTPHeaders(), transparent: true) == .serve
            ? loader.ttl(state, transparent: true) : nil
        // The Age in `info` is this second's: a second boundary crossed meanwhile spoils it.
        guard loader.nowSeconds == second else { return nil }
        return PlainHit(info: info, middle: ResponsePlan.middleLines(info), file: file, lease: loader.lease(state),
                        second: second, epoch: epoch, transparentTTL: transparentTTL, body: nil)
    }

    /// The client caught up: let a paused pass-through download go on.
    package func resumeFollowing() { following?.followerDrained() }

    package func close() {
        guard phase != .closed else { return }
        following?.unfollow(self)
        following = nil
        phase = .closed
        state.waiting[ObjectIdentifier(self)] = nil
        let held = interests
        interests.removeAll()
        awaited = nil
        for download in held { loader.leave(download) }
        loader.readerClosed(self)
    }
}
