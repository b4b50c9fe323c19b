import CacheHTTP

/// One origin request filling a byte range of a resource, as a value: the
/// origin's response head and body in, what to store and when to stop out.
///
/// ```
///               206 as asked / 200 / 416 (probe)
///  awaitingHead ───────────────────────────────▶ receiving ──all bytes──▶ finished
///       │ other status ──▶ errorBody ──end──▶ finished(originStatus)        ▲
///       │ other storable status (probe) ──▶ receiving, the whole body       │
///       │ the stored other status again (validation) ──▶ confirmed or changed│
///       │ another non-5xx status (validation, any-status cache) ──▶ changed   │
///       │ wrong Content-Range, version changed ──▶ finished(failure) ───────┤
///       │ validation (a 1-byte check) accepted ──▶ finished ────────────────┤
///  receiving ── origin ended early / failed ──▶ finished(failure) ──────────┘
/// ```
///
/// The machine decides what a head means, where each body byte goes and what a
/// failed write means; the driver (`Download`) does the I/O. A byte is accepted only
/// after its head was checked against the request and the cached version.
package struct DownloadStateMachine {
    package enum Request: Equatable, Sendable {
        /// A gap of a resource of known length (upper bound Int64.max: to the end).
        case range(Range<Int64>)
        /// The first request of a resource whose length is unknown: the client's own range.
        case probe(ByteRangeSpec)
        /// A one-byte request that checks the cached version is still the origin's.
        case validation
    }

    /// What the cache already knows of the resource when the head arrives.
    package struct Known: Equatable, Sendable {
        package var totalLength: Int64?
        package var etag: String?
        package var lastModified: String?
        /// The status of the stored response (200 for a stored 200 or 206).
        package var status: Int = 200
    }

    package enum State: Equatable {
        case awaitingHead
        /// An error status: its body is kept (bounded) for the client.
        case errorBody(status: Int, collected: Int)
        /// Storing bytes at `position` up to `end` (nil: the body's own end).
        case receiving(position: Int64, end: Int64?, responseEnd: Int64?)
        case finished(LoadError?)
    }

    package enum HeadAction: Equatable {
        /// The origin described the resource for the first time: record it.
        case adopt(totalLength: Int64?)
        /// The head matches the cached version: it is confirmed now.
        case confirmed
        /// A 304 to a revalidation (RFC 9111 §4.3.4): refresh the stored head, keep the
        /// bytes; the exchange completes by itself, so its connection goes back to the pool.
        case notModified
        /// The origin's version differs from the cached one (reason): drop the old bytes.
        case versionChanged(String)
        /// Keep the body of this error status for the client.
        case collectErrorBody
        case stopTask
        /// Bytes may now be awaited from `position`.
        case wakeReaders
        case finish
    }

    package private(set) var state: State = .awaitingHead
    package let request: Request
    /// The most error-body bytes kept for the client.
    package static let maxErrorBody = 64 << 10

    /// A range's position and end are known up front (`knownTotal` resolves an open end).
    package init(request: Request, knownTotal: Int64? = nil) {
        self.request = request
        if case .range(let range) = request {
            state = .receiving(position: range.lowerBound,
                               end: range.upperBound == Int64.max ? knownTotal : range.upperBound, responseEnd: nil)
            pendingRange = true
        }
    }

    /// A `.range` download knows its position before its head, which is still to be checked.
    private var pendingRange = false

    /// The next byte to store, while receiving.
    package var position: Int64? { if case .receiving(let position, _, _) = state { position } else { nil } }
    package var end: Int64? { if case .receiving(_, let end, _) = state { end } else { nil } }

    package var isFinished: Bool { if case .finished = state { true } else { false } }
    /// True while position and end are real: for a range from the start
    /// (other readers may wait for its bytes), else once the head was accepted.
    package var isReady: Bool { if case .receiving = state { true } else { false } }

    /// Another download takes over from `offset`: this one stops there.
    package mutating func truncate(at offset: Int64) {
        guard case .receiving(let position, let end?, let responseEnd) = state, position < offset, end > offset else {
            return
        }
        state = .receiving(position: position, end: offset, responseEnd: responseEnd)
    }

    /// The response head (redirects followed). `storesStatus`: a status other than 200/206
    /// the cache may store (RFC 9111 §3), kept or compared like a 200. `storesAnyStatus`
    /// (forward and reverse modes): a validation answered with another status replaces
    /// the stored one (`Revalidation.outcome`, RFC 9111 §4.3.3).
    package mutating func head(_ head: HTTPResponseHead, known: Known?, storesStatus: Bool = false,
                               storesAnyStatus: Bool = false) -> [HeadAction] {
        guard !isFinished, pendingRange || state == .awaitingHead else { return [] }
        pendingRange = false
        if request == .validation, let known {
            switch Revalidation.outcome(storedStatus: known.status, responseStatus: head.status,
                                        storesAnyStatus: storesAnyStatus) {
            case .notModified:
                state = .finished(nil)
                return [.notModified, .finish]
            case .replace:
                // The reader starts over and fetches the new answer whole.
                let change = "status \(known.status) → \(head.status)"
                return [.versionChanged(change)] + fail(.changed(change))
            case .error:
                state = .errorBody(status: head.status, collected: 0)
                return [.collectErrorBody]
            case .compare:
                break
            }
        }
        switch head.status {
        case 206: return accept206(head, known: known)
        case 200: return accept200(head, known: known)
        case 416 where isProbe: return accept416(head, known: known)
        case 201..<600 where storesStatus && head.status != 304 && head.status != 416
            && ((isProbe && known == nil) || (request == .validation && known != nil)):
            return accept200(head, known: known, bodiless: head.status == 204)
        default:
            state = .errorBody(status: head.status, collected: 0)
            return [.collectErrorBody]
        }
    }

    private var isProbe: Bool { if case .probe = request { true } else { false } }

    private mutating func accept206(_ head: HTTPResponseHead, known: Known?) -> [HeadAction] {
        guard let text = head.headers["content-range"], let contentRange = ContentRange.parse(text),
              let range = contentRange.range, let total = contentRange.total else {
            return fail(.mismatch("206 without a usable Content-Range"))
        }
        let expected: Range<Int64>?
        switch request {
        case .range(let asked): expected = asked.lowerBound..<(asked.upperBound == Int64.max ? total : asked.upperBound)
        case .probe(let spec): expected = spec.resolve(length: total)
        case .validation: expected = 0..<min(1, total)
        }
        guard range == expected else {
            return fail(.mismatch("origin sent bytes \(contentRange.headerValue), asked \(rangeHeader(knownTotal: known?.totalLength))"))
        }
        return receive(compare(head, totalLength: total, known: known), from: range.lowerBound,
                       end: min(self.end ?? range.upperBound, range.upperBound), responseEnd: range.upperBound)
    }

    private mutating func accept200(_ head: HTTPResponseHead, known: Known?, bodiless: Bool = false) -> [HeadAction] {
        // The origin ignored Range: the body is the whole resource. Cache all of it.
        // A 204 has none, whatever it says (RFC 9110 §15.3.5).
        let length = bodiless ? 0 : head.headers["content-length"].flatMap { Int64($0) }
        return receive(compare(head, totalLength: length, known: known), from: 0, end: length, responseEnd: length)
    }

    /// An accepted head (`actions`: what comparing said): a validation ends here, others get the body.
    private mutating func receive(_ actions: [HeadAction], from position: Int64, end: Int64?,
                                  responseEnd: Int64?) -> [HeadAction] {
        if isFinished { return actions }
        if request == .validation {
            state = .finished(nil)
            return actions + [.stopTask, .finish]
        }
        state = .receiving(position: position, end: end, responseEnd: responseEnd)
        return actions + [.wakeReaders]
    }

    private mutating func accept416(_ head: HTTPResponseHead, known: Known?) -> [HeadAction] {
        guard let text = head.headers["content-range"], let contentRange = ContentRange.parse(text),
              let total = contentRange.total else {
            state = .errorBody(status: head.status, collected: 0)
            return [.collectErrorBody]
        }
        let actions = compare(head, totalLength: total, known: known)
        if isFinished { return actions }
        state = .finished(nil)
        return actions + [.stopTask, .finish]
    }

    /// Adopts the origin's description when new, confirms it when equal, fails when changed.
    private mutating func compare(_ head: HTTPResponseHead, totalLength: Int64?, known: Known?) -> [HeadAction] {
        guard let known else { return [.adopt(totalLength: totalLength)] }
        let etag = head.headers["etag"]
        let lastModified = head.headers["last-modified"]
        var change: String?
        if let totalLength, let knownLength = known.totalLength, totalLength != knownLength {
            change = "length \(knownLength) → \(totalLength)"
        } else if let etag, let knownTag = known.etag, etag != knownTag {
            change = "ETag \(knownTag) → \(etag)"
        } else if let lastModified, let knownDate = known.lastModified, lastModified != knownDate {
            change = "Last-Modified \(knownDate) → \(lastModified)"
        }
        guard let change else { return [.confirmed] }
        return [.versionChanged(change)] + fail(.changed(change))
    }

    /// What to do with `count` body bytes that just arrived.
    package enum BodyAction: Equatable {
        /// Store this many bytes at this offset (the rest are beyond the end).
        case store(count: Int, at: Int64)
        /// Hand this many bytes straight to the readers following the download (not kept).
        case pass(count: Int, at: Int64)
        /// From this offset the download passes through. `tooLarge`: a body of unknown
        /// length outgrew the cache limit here; else the resource is transient.
        case stopKeeping(count: Int, at: Int64, tooLarge: Bool)
        /// Keep this many bytes of an error body.
        case collect(count: Int)
        case ignore
    }

    /// What the driver knows of where the bytes may go when they arrive.
    package struct Keeping: Equatable, Sendable {
        /// The resource is streamed, not stored (too large, a type not kept, …).
        package var isTransient: Bool
        /// The resource's length; nil while a body of unknown length runs.
        package var totalLength: Int64?
        /// The cache's size limit: a body of unknown length past it is not kept.
        package var maxBytes: Int64
    }

    /// The bytes go to the following readers, not to the file (disk full, or not kept). Once set, for good.
    package private(set) var isPassingThrough = false
    package mutating func passThrough() { isPassingThrough = true }

    package mutating func body(count: Int, keeping: Keeping) -> BodyAction {
        switch state {
        case .errorBody(let status, let collected):
            let take = max(0, min(count, Self.maxErrorBody - collected))
            state = .errorBody(status: status, collected: collected + take)
            return take > 0 ? .collect(count: take) : .ignore
        case .receiving(let position, let end, let responseEnd) where !pendingRange:
            let take = Int(min(Int64(count), (end ?? Int64.max) - position))
            guard take > 0 else { return .ignore }
            state = .receiving(position: position + Int64(take), end: end, responseEnd: responseEnd)
            if isPassingThrough { return .pass(count: take, at: position) }
            // A body of unknown length that outgrows the limit is not kept (the limit holds while writing).
            let tooLarge = keeping.totalLength == nil && position + Int64(take) > keeping.maxBytes
            guard tooLarge || keeping.isTransient else { return .store(count: take, at: position) }
            isPassingThrough = true
            return .stopKeeping(count: take, at: position, tooLarge: tooLarge)
        default:
            return .ignore
        }
    }

    /// What a failed write of stored bytes means.
    package enum StoreFailure: Equatable {
        /// A storage fault (disk full or failing): the download passes through from here.
        case passThrough
        /// Another error: the download fails with it (the task is stopped).
        case fail(LoadError)
    }

    /// Writing bytes that `body` said to store failed.
    package mutating func storeFailed(isFault: Bool, _ description: String) -> StoreFailure {
        guard isFault else {
            let failure = LoadError.storage(description)
            state = .finished(failure)
            return .fail(failure)
        }
        isPassingThrough = true
        return .passThrough
    }

    /// Stop early when another download took over the rest or the origin sends more than
    /// asked; a response at its own end is left to complete, so its connection is pooled.
    package var shouldStopEarly: Bool {
        guard case .receiving(let position, let end?, let responseEnd) = state else { return false }
        return position >= end && end < (responseEnd ?? Int64.max)
    }

    /// Every byte it was to store is stored and the response ends right there.
    package var hasStoredAll: Bool {
        guard case .receiving(let position, let end?, let responseEnd?) = state else { return false }
        return position >= end && end == responseEnd
    }

    /// What the end of the origin's response means.
    package enum Ending: Equatable {
        case completed
        /// A body of unknown length ended: this is its length.
        case completedWithLength(Int64)
        case failed(LoadError)
    }

    /// The origin's response ended (cleanly, or with `error`).
    package mutating func responseEnded(error: LoadError?, errorHead: HTTPResponseHead?, errorBody: [UInt8]) -> Ending? {
        guard !isFinished else { return nil }
        let ending: Ending
        if case .errorBody = state, let errorHead {
            ending = .failed(.originStatus(status: errorHead.status, headers: errorHead.headers, body: errorBody))
        } else if let error {
            ending = .failed(error)
        } else if case .receiving(let position, let end, _) = state, !pendingRange {
            if end == nil {
                state = .receiving(position: position, end: position, responseEnd: position)
                ending = .completedWithLength(position)
            } else if let end, position < end {
                ending = .failed(.upstream(.closedEarly("body ended at \(position), expected \(end)")))
            } else {
                ending = .completed
            }
        } else {
            ending = .failed(.mismatch("origin response ended without a body"))
        }
        if case .failed(let failure) = ending { state = .finished(failure) } else { state = .finished(nil) }
        return ending
    }

    /// Stopped from outside (nobody wants the bytes, shutdown, a failure).
    package mutating func stop(_ failure: LoadError?) -> Bool {
        guard !isFinished else { return false }
        state = .finished(failure)
        return true
    }

    private mutating func fail(_ error: LoadError) -> [HeadAction] {
        state = .finished(error)
        return [.stopTask, .finish]
    }

    package var failure: LoadError? { if case .finished(let failure) = state { failure } else { nil } }

    /// The Range field this request sends.
    package func rangeHeader(knownTotal: Int64?) -> String {
        switch request {
        case .range(let range):
            return range.upperBound == Int64.max || range.upperBound == knownTotal
                ? "bytes=\(range.lowerBound)-" : "bytes=\(range.lowerBound)-\(range.upperBound - 1)"
        case .probe(.closed(let first, let last)): return "bytes=\(first)-\(last)"
        case .probe(.from(let first)): return "bytes=\(first)-"
        case .probe(.suffix(let length)): return "bytes=-\(length)"
        case .validation: return "bytes=0-0"
        }
    }
}
