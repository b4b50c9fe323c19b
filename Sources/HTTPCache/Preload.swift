import CacheHTTP
import CacheLoading
import Glibc
import CacheIO

/// Which variants of an HLS multivariant playlist a preload fetches.
public enum PreloadVariantChoice: Sendable, Equatable {
    /// Every variant (and the renditions each uses).
    case all
    /// The variant of highest BANDWIDTH.
    case highest
    /// The variant of lowest BANDWIDTH.
    case lowest
    /// The highest variant not above this many bits per second (the lowest when all are above).
    case bandwidth(Int)

    /// Parses `all`, `highest`, `lowest` or a number of bits per second.
    public init?(_ text: String) {
        switch PreloadRequest.parseVariants(text) {
        case nil: return nil
        case .all?: self = .all
        case .one(.highest)?: self = .highest
        case .one(.lowest)?: self = .lowest
        case .one(.closest(let bits))?: self = .bandwidth(bits)
        }
    }

    var walkerChoice: PreloadVariants {
        switch self {
        case .all: return .all
        case .highest: return .one(.highest)
        case .lowest: return .one(.lowest)
        case .bandwidth(let bits): return .one(.closest(toBandwidth: bits))
        }
    }
}

/// How a preload walks an HLS playlist or a DASH manifest and what it keeps.
public struct PreloadOptions: Sendable, Equatable {
    /// The preload of `url` (bytes `range`, inclusive) as the preloader (here or a proxy) takes it.
    package func request(_ url: String, range: ClosedRange<Int64>?) -> PreloadRequest {
        PreloadRequest(url: url, range: range.map { $0.lowerBound..<($0.upperBound + 1) }, variants: variants.walkerChoice,
                       duration: duration, pin: pin, language: language)
    }

    /// HLS: the variants; DASH: the representations of each adaptation set.
    public var variants: PreloadVariantChoice
    /// Seconds of media per media playlist (DASH: representation, period) from the first segment; nil: all.
    public var duration: Double?
    /// Keeps everything preloaded out of LRU eviction until `unpin` of the URL (still counted).
    public var pin: Bool
    /// DASH: only audio and text adaptation sets in this language ("en" takes "en-GB"; all of a
    /// kind when none is in it); nil: every one.
    public var language: String?

    public init(variants: PreloadVariantChoice = .all, duration: Double? = nil, pin: Bool = false,
                language: String? = nil) {
        self.variants = variants
        self.duration = duration
        self.pin = pin
        self.language = language
    }
}

/// How far a preload got.
public struct PreloadProgress: Sendable, Equatable {
    /// Body bytes read into (or found in) the cache.
    public var bytesDone: Int64
    /// Bytes of the resources of known size so far (HLS: grows as segments are found); nil: none yet.
    public var bytesTotal: Int64?
    /// HLS media segments done and found so far (0 for a plain resource).
    public var segmentsDone: Int
    public var segmentsTotal: Int
    /// Resources (or byte ranges) done and found so far: playlists, keys, init sections, segments.
    public var resourcesDone: Int
    public var resourcesTotal: Int
    /// The URL was a live DASH manifest: what was available when read is preloaded, no more.
    public var live = false

    /// The part done, 0 to 1: of the bytes when sizes are known, else of the resources.
    public var fractionDone: Double {
        if let total = bytesTotal, total > 0 { return min(1, Double(bytesDone) / Double(total)) }
        return resourcesTotal > 0 ? Double(resourcesDone) / Double(resourcesTotal) : 0
    }

    public init(bytesDone: Int64 = 0, bytesTotal: Int64? = nil, segmentsDone: Int = 0, segmentsTotal: Int = 0,
                resourcesDone: Int = 0, resourcesTotal: Int = 0) {
        self.bytesDone = bytesDone
        self.bytesTotal = bytesTotal
        self.segmentsDone = segmentsDone
        self.segmentsTotal = segmentsTotal
        self.resourcesDone = resourcesDone
        self.resourcesTotal = resourcesTotal
    }

    init(_ status: PreloadStatus) {
        self.init(bytesDone: status.bytesDone, bytesTotal: status.bytesTotal,
                  segmentsDone: status.counts.segmentsDone, segmentsTotal: status.counts.segmentsTotal,
                  resourcesDone: status.counts.resourcesDone, resourcesTotal: status.counts.resourcesTotal)
        live = status.counts.live
    }
}

/// A running preload: progress, cancel, its end (async/await, `AsyncStream`, polling). Thread-safe.
public final class PreloadTask: Sendable {
    /// The URL preloaded.
    public let url: String
    private let state = Locked<State>(State())
    private let cancelAction: @Sendable () -> Void

    private struct State: Sendable {
        var progress = PreloadProgress()
        var result: Result<PreloadProgress, HTTPCacheError>?
        var waiters: [CheckedContinuation<Result<PreloadProgress, HTTPCacheError>, Never>] = []
        var streams: [Int: AsyncStream<PreloadProgress>.Continuation] = [:]
        var nextStream = 0
    }

    init(url: String, cancel: @escaping @Sendable () -> Void) {
        self.url = url
        cancelAction = cancel
    }

    /// The latest progress.
    public var progress: PreloadProgress { state.withLock { $0.progress } }
    /// nil while running; then the final progress, or why it failed.
    public var result: Result<PreloadProgress, HTTPCacheError>? { state.withLock { $0.result } }

    /// Stops the preload; it ends with `.canceled` (bytes already cached stay).
    public func cancel() { cancelAction() }

    /// Waits for the end: the final progress, or the first failure.
    public func value() async throws(HTTPCacheError) -> PreloadProgress {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<PreloadProgress, HTTPCacheError>, Never>) in
            let done: Result<PreloadProgress, HTTPCacheError>? = state.withLock { state in
                if let result = state.result { return result }
                state.waiters.append(continuation)
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
        return try result.get()
    }

    /// Progress reports until the end (then the stream finishes; the outcome is in `result`); new each call.
    public var updates: AsyncStream<PreloadProgress> {
        AsyncStream(bufferingPolicy: .bufferingNewest(16)) { continuation in
            let finished: PreloadProgress? = state.withLock { state in
                if state.result != nil { return state.progress }
                state.nextStream += 1
                state.streams[state.nextStream] = continuation
                continuation.yield(state.progress)
                return nil
            }
            if let finished {
                continuation.yield(finished)
                continuation.finish()
            }
        }
    }

    /// Blocks the calling thread until the end or `timeout` seconds; nil on timeout.
    public func wait(timeout: Double) -> Result<PreloadProgress, HTTPCacheError>? {
        var waited = 0.0
        while waited < timeout {
            if let result { return result }
            usleep(20_000)
            waited += 0.02
        }
        return result
    }

    /// Called on the loop with each status.
    func update(_ status: PreloadStatus) {
        let progress = PreloadProgress(status)
        var outcome: Result<PreloadProgress, HTTPCacheError>?
        if case .finished(let failure) = status.phase {
            outcome = failure.map { .failure(HTTPCacheError($0)) } ?? .success(progress)
        }
        let (waiters, streams) = state.withLock { state in
            guard state.result == nil else { return ([CheckedContinuation<Result<PreloadProgress, HTTPCacheError>, Never>](), [AsyncStream<PreloadProgress>.Continuation]()) }
            state.progress = progress
            let streams = Array(state.streams.values)
            guard let outcome else { return ([], streams) }
            state.result = outcome
            let waiters = state.waiters
            state.waiters = []
            state.streams = [:]
            return (waiters, streams)
        }
        for stream in streams {
            stream.yield(progress)
            if outcome != nil { stream.finish() }
        }
        if let outcome { for waiter in waiters { waiter.resume(returning: outcome) } }
    }
}

extension MediaCache {
    /// Fetches `url` into the cache in the background through the players' downloads (sharing their
    /// fetches), at lower priority (no new fetch while a player's request is served; two at once).
    ///
    /// With `range` (inclusive byte offsets), exactly those bytes; without, the whole resource, and an HLS
    /// playlist's walk goes on: master → variants (`options.variants`) → their renditions → keys, init
    /// sections and segments (all, or the first `options.duration` seconds of each media playlist). A DASH
    /// MPD walks every period and adaptation set: the chosen representations' initialization, index and
    /// media segments (SegmentTemplate, SegmentTimeline, SegmentList, SegmentBase via `sidx`); a live one
    /// what is available now (`PreloadProgress.live`).
    public func preload(_ url: String, range: ClosedRange<Int64>? = nil,
                        options: PreloadOptions = PreloadOptions()) throws(HTTPCacheError) -> PreloadTask {
        guard OriginURL.parse(url) != nil else { throw HTTPCacheError(.invalidArgument, "not an http or https URL: \(url)") }
        if let range, range.lowerBound < 0 { throw HTTPCacheError(.invalidArgument, "bad range \(range)") }
        let request = options.request(url, range: range)
        let ids = Locked<Int?>(nil)
        // Preloads run on the first loop; their fetches on the loops owning what they fetch.
        let engines = self.engines
        let task = PreloadTask(url: url) {
            guard let id = ids.withLock({ $0 }) else { return }
            engines.run(0) { $0.preloader.cancel(id) }
        }
        let id = engines.submitAndWait(0) { engine in
            engine.preloader.start(request) { status in task.update(status) }
        }
        guard let id else { throw HTTPCacheError(.closed, "the cache is closed") }
        ids.withLock { $0 = id }
        return task
    }
}
