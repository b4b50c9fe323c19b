import CacheHTTP

/// Why an in-process read failed on the loop side.
package enum ReaderFailure: Error, CustomStringConvertible, Sendable {
    /// The origin or the cache failed (as a proxy response would).
    case load(LoadError)
    /// A position outside the resource (or the opened range).
    case range(String)
    /// The host's decryption choice for the URL failed.
    case decryption(DecryptionSetupError)

    package var description: String {
        switch self {
        case .load(let error): return error.description
        case .range(let reason): return reason
        case .decryption(let error): return error.description
        }
    }
}

/// One in-process reader of one resource, as a value: consumer demand,
/// seeks and source progress in, loop actions out.
///
/// ```
///  idle ─demand─▶ opening ─head─▶ streaming ─source end─▶ ended
///                    │ failed        │ failed
///                    └─────────────▶ failed ◀──────────────
///  seek (any but stopped): close the source, open one at the offset ─▶ opening
///  stop: ─▶ stopped (terminal)
/// ```
///
/// Positions are plaintext offsets. Each source's range is planned with `ResponsePlan`,
/// as a proxy response's; the source (`BodySource`) widens, decrypts, cuts and reports
/// what it handed over (`published`). The machine never holds bytes.
package struct ReaderMachine {
    package enum State {
        /// Opened: no I/O until the consumer asks for something.
        case idle
        /// A source is started at `position`; its head is awaited.
        case opening
        case streaming
        /// Every byte of the range was handed over (until a seek).
        case ended
        /// Reads fail with this until a seek.
        case failed(ReaderFailure)
        /// Canceled or closed: terminal.
        case stopped
    }

    package enum Event {
        /// The consumer wants bytes (or the content info).
        case demand
        /// The source's head (its transform chosen).
        case headReady(ContentInfo)
        case headFailed(ReaderFailure)
        case sourceFinished
        case sourceFailed(LoadError)
        /// The source handed `count` plaintext bytes to the consumer.
        case published(count: Int)
        case seek(Int64)
        case stop
    }

    package enum Action: Equatable {
        /// Start a source for plaintext bytes from `from` (through `through`, when bounded).
        case openSource(from: Int64, through: Int64?)
        /// The source's body: these plaintext bytes.
        case deliver(Range<Int64>)
        /// Hand `info` to the consumer.
        case publishInfo
        case publishEnd
        /// Hand `failure` to the consumer.
        case publishFailure
        case closeSource
    }

    package private(set) var state: State = .idle
    /// The opened range: first byte and length (nil: to the end).
    package let start: Int64
    package let length: Int64?
    /// The next plaintext byte to hand over.
    package private(set) var position: Int64
    package private(set) var info: ContentInfo?
    private var sourceOpen = false

    package init(start: Int64, length: Int64?) {
        self.start = start
        self.length = length
        position = start
    }

    /// Where the range ends; `Int64.max` while the resource's length is unknown.
    package var end: Int64 { min(length.map { start + $0 } ?? Int64.max, info?.totalLength ?? Int64.max) }

    package var failure: ReaderFailure? { if case .failed(let failure) = state { failure } else { nil } }

    package mutating func handle(_ event: Event) -> [Action] {
        if case .stopped = state { return [] }
        switch event {
        case .stop:
            state = .stopped
            return closeSource()
        case .seek(let offset):
            return seek(offset)
        case .demand:
            guard case .idle = state else { return [] }
            return openSource()
        case .headReady(let info):
            guard case .opening = state else { return [] }
            return headReady(info)
        case .headFailed(let failure):
            guard case .opening = state else { return [] }
            return fail(failure)
        case .published(let count):
            position += Int64(count)
            return []
        case .sourceFinished:
            guard case .streaming = state else { return [] }
            state = .ended
            return closeSource() + [.publishEnd]
        case .sourceFailed(let error):
            guard case .streaming = state else { return [] }
            return fail(.load(error))
        }
    }

    private mutating func headReady(_ info: ContentInfo) -> [Action] {
        var actions: [Action] = []
        if self.info == nil { actions.append(.publishInfo) }
        self.info = info
        if position == end || position == info.totalLength {
            state = .ended
            return actions + closeSource() + [.publishEnd]
        }
        var request = BodyRequest(range: Self.spec(from: position, to: end))
        request.rangesOfUnknownLength = true
        let plan = ResponsePlan(request, info: info)
        guard plan.status != 416, start <= info.totalLength ?? Int64.max else {
            return actions + fail(.range("offset \(position) is past the end (\(info.totalLength ?? 0) bytes)"))
        }
        state = .streaming
        return actions + [.deliver(plan.body)]
    }

    /// The bytes `from..<to` as a Range field would ask for them.
    static func spec(from: Int64, to: Int64) -> ByteRangeSpec {
        to == Int64.max ? .from(first: from) : .closed(first: from, last: to - 1)
    }

    private mutating func openSource() -> [Action] {
        state = .opening
        let bound = end
        var actions = closeSource()
        sourceOpen = true
        actions.append(.openSource(from: position, through: bound == Int64.max || bound <= position ? nil : bound - 1))
        return actions
    }

    private mutating func seek(_ offset: Int64) -> [Action] {
        // Without a key nothing can be read anywhere: stay failed.
        if case .failed(.decryption) = state { return [.publishFailure] }
        let limit = info == nil ? Int64.max : end
        guard offset >= start, offset <= limit else {
            return fail(.range("offset \(offset) is outside the range \(start)..<\(limit == Int64.max ? "end" : String(limit))"))
        }
        position = offset
        if case .idle = state { return [] }
        if info != nil && offset == end {
            state = .ended
            return closeSource() + [.publishEnd]
        }
        return openSource()
    }

    private mutating func fail(_ failure: ReaderFailure) -> [Action] {
        state = .failed(failure)
        return closeSource() + [.publishFailure]
    }

    private mutating func closeSource() -> [Action] {
        guard sourceOpen else { return [] }
        sourceOpen = false
        return [.closeSource]
    }
}
