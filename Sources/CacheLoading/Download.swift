import CacheHTTP
import CacheStorage
import CacheUpstream
import Logging

/// One origin request filling a byte range of a resource's data file.
///
/// Every byte is written at its offset before readers are woken, so readers
/// only ever send bytes that are in the file. Validation happens before the
/// first byte is written: a response that contradicts the request or the
/// cached version fails the download and stores nothing. Loop thread only.
final class Download: UpstreamResponseDelegate {
    enum Request {
        /// A gap of a resource of known length (upper bound Int64.max: to the end).
        case range(Range<Int64>)
        /// The first request of a resource whose length is unknown: the client's own range.
        case probe(ByteRangeSpec)
        /// A one-byte request that checks the cached version is still the origin's.
        case validation
    }

    let id: Int
    let state: ResourceState
    let request: Request
    private unowned let loader: Loader
    var task: UpstreamTask?
    /// Next offset to write.
    private(set) var position: Int64 = 0
    /// Where the download stops (exclusive); nil while unknown.
    var end: Int64?
    /// True once the response head was accepted (position and end are real).
    private(set) var ready = false
    /// Where the origin's response body ends (exclusive), when it says so.
    private var responseEnd: Int64?
    private(set) var finished = false
    private(set) var failure: LoadError?
    /// Readers that want this download's bytes; at zero it is cancelled.
    var interest = 0
    private var errorHead: HTTPResponseHead?
    private var errorBody: [UInt8] = []
    /// The client request this download serves, for the storing rules (RFC 9111 §3).
    let clientHeaders: HTTPHeaders
    /// When the request was sent (RFC 9111 §4.2.3 request_time), in seconds.
    let requestTime: Int64

    init(id: Int, state: ResourceState, request: Request, loader: Loader, clientHeaders: HTTPHeaders = HTTPHeaders()) {
        self.id = id
        self.state = state
        self.request = request
        self.loader = loader
        self.clientHeaders = clientHeaders
        requestTime = loader.nowSeconds
        switch request {
        case .range(let range):
            position = range.lowerBound
            end = range.upperBound == Int64.max ? state.resource.totalLength : range.upperBound
            ready = true
        case .validation:
            end = 0  // checks the head only; no byte is written
        case .probe:
            break
        }
    }

    var rangeHeader: String {
        switch request {
        case .range(let range):
            return range.upperBound == Int64.max || range.upperBound == state.resource.totalLength
                ? "bytes=\(range.lowerBound)-" : "bytes=\(range.lowerBound)-\(range.upperBound - 1)"
        case .probe(.closed(let first, let last)): return "bytes=\(first)-\(last)"
        case .probe(.from(let first)): return "bytes=\(first)-"
        case .probe(.suffix(let length)): return "bytes=-\(length)"
        case .validation: return "bytes=0-0"
        }
    }

    /// Every byte it was to write is in the file and the origin's response
    /// ends right there: it completes on its own, and cancelling it would
    /// only throw away a connection that can go back to the pool.
    var hasWrittenAll: Bool {
        guard let end, let responseEnd else { return false }
        return position >= end && end == responseEnd
    }

    var isProbe: Bool {
        if case .probe = request { return true }
        return false
    }

    // MARK: UpstreamResponseDelegate

    func upstreamDidReceiveHead(_ head: HTTPResponseHead) {
        switch head.status {
        case 206: accept206(head)
        case 200: accept200(head)
        case 416 where isProbe: accept416(head)
        case 304 where isValidation && state.headKnown:
            // Not modified: the stored head is refreshed, the cached bytes stay
            // as they are. The exchange completes on its own (no body), so the
            // connection goes back to the pool.
            loader.refreshHead(state, with: head, requestTime: requestTime)
            state.resource.validatedAt = loader.store.clock()
            finish(nil)
        default:
            errorHead = head
        }
    }

    var isValidation: Bool {
        if case .validation = request { return true }
        return false
    }

    private func accept206(_ head: HTTPResponseHead) {
        guard let text = head.headers["content-range"], let contentRange = ContentRange.parse(text),
              let range = contentRange.range, let total = contentRange.total else {
            return fail(.mismatch("206 without a usable Content-Range"))
        }
        let expected: Range<Int64>?
        switch request {
        case .range(let asked):
            expected = asked.lowerBound..<(asked.upperBound == Int64.max ? total : asked.upperBound)
        case .probe(let spec):
            expected = spec.resolve(length: total)
        case .validation:
            expected = 0..<min(1, total)
        }
        guard range == expected else {
            return fail(.mismatch("origin sent bytes \(contentRange.headerValue), asked \(rangeHeader)"))
        }
        guard adopt(head, totalLength: total) else { return }
        if isValidation {
            task?.cancel()
            return finish(nil)
        }
        position = range.lowerBound
        responseEnd = range.upperBound
        end = min(end ?? range.upperBound, range.upperBound)
        ready = true
        state.wakeReaders()
    }

    private func accept200(_ head: HTTPResponseHead) {
        // The origin ignored Range: the body is the whole resource. Cache all of it.
        let length = head.headers["content-length"].flatMap { Int64($0) }
        guard adopt(head, totalLength: length) else { return }
        if isValidation {
            task?.cancel()
            return finish(nil)
        }
        position = 0
        responseEnd = length
        end = length
        ready = true
        state.wakeReaders()
    }

    private func accept416(_ head: HTTPResponseHead) {
        guard let text = head.headers["content-range"], let contentRange = ContentRange.parse(text),
              let total = contentRange.total else {
            errorHead = head
            return
        }
        guard adopt(head, totalLength: total) else { return }
        task?.cancel()
        finish(nil)
    }

    /// Records the origin's description of the resource, or checks it against
    /// the cached version. False (and failed) when they disagree: the
    /// resource changed at the origin, so its cached bytes are dropped.
    private func adopt(_ head: HTTPResponseHead, totalLength: Int64?) -> Bool {
        let resource = state.resource
        let etag = head.headers["etag"]
        let lastModified = head.headers["last-modified"]
        if state.headKnown {
            let known = resource.metadata
            var change: String?
            if let totalLength, let knownLength = known.totalLength, totalLength != knownLength {
                change = "length \(knownLength) → \(totalLength)"
            } else if let etag, let knownTag = known.etag, etag != knownTag {
                change = "ETag \(knownTag) → \(etag)"
            } else if let lastModified, let knownDate = known.lastModified, lastModified != knownDate {
                change = "Last-Modified \(knownDate) → \(lastModified)"
            }
            if let change {
                loader.versionChanged(state, reason: change, except: self)
                fail(.changed(change))
                return false
            }
            resource.validatedAt = loader.store.clock()
            if isValidation { loader.refreshHead(state, with: head, requestTime: requestTime) }
            return true
        }
        resource.setInfo(totalLength: totalLength, contentType: head.headers["content-type"],
                         etag: etag, lastModified: lastModified)
        loader.adoptHead(state, response: head, request: clientHeaders, requestTime: requestTime)
        state.headKnown = true
        resource.validatedAt = loader.store.clock()
        loader.classify(state)
        return true
    }

    func upstreamDidReceiveBody(_ bytes: UnsafeRawBufferPointer) {
        if errorHead != nil {
            let room = max(0, Loader.maxErrorBody - errorBody.count)
            errorBody.append(contentsOf: bytes.prefix(room))
            return
        }
        guard ready, !finished else { return }
        loader.received(bytes.count)
        let limit = end.map { $0 - position } ?? Int64.max
        let take = Int(min(Int64(bytes.count), limit))
        if take > 0 {
            let chunk = UnsafeRawBufferPointer(rebasing: bytes[0..<take])
            if isPassThrough {
                push(chunk)
            } else {
                do {
                    try state.resource.write(chunk, at: position)
                } catch {
                    guard error.isNoSpace else {
                        task?.cancel()
                        return fail(.storage(error.description))
                    }
                    loader.store.noteDiskFull()
                    becomePassThrough()
                    if finished { return }
                    push(chunk)
                    return
                }
                position += Int64(take)
                state.wakeReaders()
            }
        }
        if let end, position >= end, !finished, end < (responseEnd ?? Int64.max) {
            // Another download took over the rest, or the origin sends more
            // than was asked: stop here. A response that simply reached its
            // own end is left to complete, so its connection goes back to
            // the pool instead of being closed (a new connection per miss
            // would cost every cold request a resolve and a handshake).
            if task?.isFinished == false {
                task?.cancel()
                finish(nil)
            }
        }
    }

    func upstreamDidFinish(_ error: UpstreamError?) {
        guard !finished else { return }
        if let head = errorHead {
            return fail(.originStatus(status: head.status, headers: head.headers, body: errorBody))
        }
        if let error { return fail(.upstream(error)) }
        guard ready else { return fail(.mismatch("origin response ended without a body")) }
        if end == nil {
            // A body of unknown length: now it is known.
            let resource = state.resource
            resource.setInfo(totalLength: position, contentType: resource.metadata.contentType,
                             etag: resource.metadata.etag, lastModified: resource.metadata.lastModified)
            end = position
        } else if let end, position < end {
            return fail(.upstream(.closedEarly("body ended at \(position), expected \(end)")))
        }
        finish(nil)
    }

    // MARK: passing bytes through (the disk is full)

    /// Readers fed straight from this download; nothing is written to the file.
    private(set) var followers: [ResourceReader] = []
    private(set) var isPassThrough = false
    private var paused = false

    /// From now on bytes go to `followers` instead of the data file.
    func passThrough(to readers: [ResourceReader]) {
        isPassThrough = true
        followers = readers
        for reader in readers { reader.follow(self) }
    }

    /// The disk filled up mid-download: readers waiting for exactly the next
    /// byte follow it; the others replan (and pass through on their own).
    private func becomePassThrough() {
        let next = position
        let readers = state.waiting.values.filter { $0.isWaiting(for: self, at: next) }
        passThrough(to: readers)
        if followers.isEmpty { cancel() }
        state.wakeReaders()
    }

    private func push(_ bytes: UnsafeRawBufferPointer) {
        let offset = position
        position += Int64(bytes.count)
        var full = false
        for reader in followers where !reader.receive(bytes, at: offset) { full = true }
        if full && !paused {
            paused = true
            task?.pause()
        }
    }

    /// A follower's socket drained: go on once none is full.
    func followerDrained() {
        guard paused else { return }
        paused = false
        task?.resume()
    }

    func unfollow(_ reader: ResourceReader) {
        followers.removeAll { $0 === reader }
        if isPassThrough && followers.isEmpty { cancel() } else { followerDrained() }
    }

    /// Stops the download because nobody wants its bytes any more.
    func cancel() {
        guard !finished else { return }
        task?.cancel()
        finish(nil)
    }

    private func fail(_ error: LoadError) {
        guard !finished else { return }
        task?.cancel()
        finish(error)
    }

    private func finish(_ error: LoadError?) {
        guard !finished else { return }
        finished = true
        failure = error
        task = nil
        loader.downloadFinished(self)
    }
}
