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
///  idle ─demand─▶ choosingDecryption ─chosen─▶ opening ─head─▶ streaming ─source end─▶ finishing ─flushed─▶ ended
///                          │ failed                 │ failed       │ failed
///                          └───────────────────────▶ failed ◀──────┘
///  seek (any but stopped): close the source, open a new one at the offset ─▶ opening
///  stop: ─▶ stopped (terminal)
/// ```
///
/// Positions are plaintext byte offsets of the resource. With decryption
/// (`alignment` 16) the source reads whole cipher blocks from the block
/// holding `position`, and the driver cuts its output back to
/// `position..<end`. The machine never holds bytes: the driver moves them
/// and reports how many it handed to the consumer (`published`).
package struct ReaderMachine {
    package enum State {
        /// Opened: no I/O until the consumer asks for something.
        case idle
        case choosingDecryption
        /// A source is started at `position`; its head is awaited.
        case opening
        /// Delivering. `held`: input bytes of the last file piece not yet copied.
        case streaming(held: Range<Int64>?)
        /// The source ended; what the transform held back is being handed over
        /// (it may still fail: an ECB tail that is not a whole block).
        case finishing
        /// Every byte of the range was handed over (until a seek).
        case ended
        /// Reads fail with this until a seek.
        case failed(ReaderFailure)
        /// Canceled or closed: terminal.
        case stopped
    }

    package enum Event {
        /// The consumer wants bytes (or the content info); its buffer has room for `space` more.
        case demand(space: Int)
        /// The decryption choice: the cipher block size (1 for plain), or why there is none.
        case decryptionChosen(Result<Int64, DecryptionSetupError>)
        case headReady(ContentInfo)
        case headFailed(LoadError)
        /// The source's next piece: these input bytes are in the data file.
        case file(Range<Int64>)
        case pending
        case sourceFinished
        /// The `flush` is done.
        case flushed
        case sourceFailed(LoadError)
        /// Bytes landed: the source may have more.
        case canContinue
        /// The driver handed `count` plaintext bytes to the consumer; its buffer has room for `space`.
        case published(count: Int, space: Int)
        case seek(Int64)
        case stop
    }

    package enum Action: Equatable {
        case chooseDecryption
        /// Start a source (a `ResourceReader`) for input bytes from `from` (through `through`, when bounded).
        case openSource(from: Int64, through: Int64?)
        /// The source's body: these input bytes.
        case deliver(Range<Int64>)
        /// Ask the source for its next piece.
        case pull
        /// Read these input bytes of the current file piece, decrypt, cut, hand over.
        case copy(Range<Int64>)
        /// The input ended: hand over what the transform held back (a short last block).
        case flush
        /// Hand `info` to the consumer.
        case publishInfo
        case publishEnd
        /// Hand `failure` to the consumer.
        case publishFailure
        case closeSource
    }

    /// The largest single copy: keeps each loop turn short.
    package static let maxCopy: Int64 = 256 << 10

    package private(set) var state: State = .idle
    /// The opened range: first byte and length (nil: to the end).
    package let start: Int64
    package let length: Int64?
    /// The next plaintext byte to hand over.
    package private(set) var position: Int64
    /// Where the range ends; `Int64.max` while the resource's length is unknown.
    package private(set) var end: Int64 = Int64.max
    package private(set) var info: ContentInfo?
    private var alignment: Int64 = 1
    private var space = 0
    private var sourceOpen = false
    /// The source is asked for its next piece (a `pull` is out).
    private var pulling = false

    package init(start: Int64, length: Int64?) {
        self.start = start
        self.length = length
        position = start
    }

    package var failure: ReaderFailure? {
        if case .failed(let failure) = state { return failure }
        return nil
    }

    package mutating func handle(_ event: Event) -> [Action] {
        if case .stopped = state { return [] }
        switch event {
        case .stop:
            state = .stopped
            return closeSource()
        case .seek(let offset):
            return seek(offset)
        case .demand(let space):
            self.space = space
            switch state {
            case .idle:
                state = .choosingDecryption
                return [.chooseDecryption]
            case .streaming(let held):
                return advance(held)
            default:
                return []
            }
        case .decryptionChosen(let result):
            guard case .choosingDecryption = state else { return [] }
            switch result {
            case .success(let alignment):
                self.alignment = max(1, alignment)
                return openSource()
            case .failure(let error):
                return fail(.decryption(error))
            }
        case .headReady(let info):
            guard case .opening = state else { return [] }
            return headReady(info)
        case .headFailed(let error):
            guard case .opening = state else { return [] }
            return fail(.load(error))
        case .file(let range):
            guard case .streaming = state else { return [] }
            pulling = false
            return advance(range)
        case .pending:
            pulling = false
            return []
        case .canContinue:
            guard case .streaming(let held) = state else { return [] }
            return advance(held)
        case .published(let count, let space):
            position += Int64(count)
            self.space = space
            guard case .streaming(let held) = state else { return [] }
            return advance(held)
        case .sourceFinished:
            guard case .streaming = state else { return [] }
            pulling = false
            state = .finishing
            return [.flush]
        case .flushed:
            guard case .finishing = state else { return [] }
            state = .ended
            return closeSource() + [.publishEnd]
        case .sourceFailed(let error):
            switch state {
            case .streaming, .finishing: break
            default: return []
            }
            pulling = false
            return fail(.load(error))
        }
    }

    /// Copies what the current piece still holds, or asks for the next one, while there is room.
    private mutating func advance(_ held: Range<Int64>?) -> [Action] {
        guard space > 0 else {
            state = .streaming(held: held)
            return []
        }
        if let held, !held.isEmpty {
            let take = held.lowerBound..<min(held.upperBound, held.lowerBound + min(Int64(space), Self.maxCopy))
            state = .streaming(held: take.upperBound..<held.upperBound)
            return [.copy(take)]
        }
        state = .streaming(held: nil)
        guard !pulling else { return [] }
        pulling = true
        return [.pull]
    }

    private mutating func headReady(_ info: ContentInfo) -> [Action] {
        var actions: [Action] = []
        let first = self.info == nil
        self.info = info
        if first { actions.append(.publishInfo) }
        let total = info.totalLength ?? Int64.max
        end = min(length.map { start + $0 } ?? Int64.max, total)
        guard position <= end, start <= total else {
            return actions + fail(.range("offset \(position) is past the end (\(total) bytes)"))
        }
        if position == end {
            state = .ended
            return actions + closeSource() + [.publishEnd]
        }
        let lower = position / alignment * alignment
        var upper = end
        if upper != Int64.max {
            upper = min((upper + alignment - 1) / alignment * alignment, total)
        }
        state = .streaming(held: nil)
        pulling = false
        return actions + [.deliver(lower..<upper)] + advance(nil)
    }

    private mutating func openSource() -> [Action] {
        state = .opening
        pulling = false
        let from = position / alignment * alignment
        var through: Int64?
        if let length, end == Int64.max || info == nil {
            through = (start + length + alignment - 1) / alignment * alignment - 1
        } else if end != Int64.max {
            through = min((end + alignment - 1) / alignment * alignment, info?.totalLength ?? Int64.max) - 1
        }
        if let last = through, last < from { through = nil }
        var actions = closeSource()
        sourceOpen = true
        actions.append(.openSource(from: from, through: through))
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
        switch state {
        case .idle, .choosingDecryption:
            return []
        default:
            if info != nil && offset == end {
                state = .ended
                return closeSource() + [.publishEnd]
            }
            return openSource()
        }
    }

    private mutating func fail(_ failure: ReaderFailure) -> [Action] {
        state = .failed(failure)
        return closeSource() + [.publishFailure]
    }

    private mutating func closeSource() -> [Action] {
        guard sourceOpen else { return [] }
        sourceOpen = false
        pulling = false
        return [.closeSource]
    }
}
