import CacheHTTP
import CacheIO
import CacheStorage
import Logging

package struct PreloadStatus: Sendable, Equatable {
    package enum Phase: Sendable, Equatable {
        case running
        /// Over: nil when everything was fetched, else the first failure.
        case finished(PreloadFailure?)
    }
    package var id: Int
    package var url: String
    package var phase: Phase = .running
    /// Body bytes read so far (from the cache or the origin).
    package var bytesDone: Int64 = 0
    /// Bytes of the items sized so far (grows as a walk finds more); nil: none yet.
    package var bytesTotal: Int64?
    /// Items whose size is known (those `bytesTotal` adds up).
    package var resourcesSized = 0
    package var counts = PreloadCounts()

    package init(id: Int, url: String) {
        self.id = id
        self.url = url
    }
}

/// Drives one preload's `PreloadWalker`. Events raised while acting (a fetch ending at
/// once from the cache) are queued and handled after, never re-entrantly.
final class PreloadRun: PreloadFetchOwner {
    let id: Int
    private unowned let preloader: Preloader
    private(set) var walker: PreloadWalker
    private var events = EventQueue<PreloadWalker.Event>()
    private var fetches: [Int: PreloadFetch] = [:]
    private(set) var status: PreloadStatus
    private let onUpdate: (PreloadStatus) -> Void

    init(id: Int, request: PreloadRequest, window: Int, preloader: Preloader, onUpdate: @escaping (PreloadStatus) -> Void) {
        self.id = id
        self.preloader = preloader
        walker = PreloadWalker(request: request, window: window, now: Double(WallClock.milliseconds()) / 1000)
        status = PreloadStatus(id: id, url: request.url)
        self.onUpdate = onUpdate
    }

    func send(_ event: PreloadWalker.Event) {
        guard events.push(event) else { return }
        while let next = events.next() { for action in walker.handle(next) { perform(action) } }
        report()
    }

    private func report() {
        status.counts = walker.counts
        onUpdate(status)
    }

    private func perform(_ action: PreloadWalker.Action) {
        switch action {
        case .fetch(let item):
            let fetch = PreloadFetch(item: item, run: self)
            fetches[item.id] = fetch
            preloader.enqueue(fetch)
        case .stopFetches:
            for fetch in fetches.values {
                fetch.cancel()
                preloader.fetchGone(fetch)
            }
            fetches.removeAll()
        case .finish(let failure):
            // A run found too large fails even when its last fetch ended before the abort ran.
            let failure = failure ?? tooLarge
            status.phase = .finished(failure)
            status.counts = walker.counts
            preloader.runEnded(self, failure)
        }
    }

    var holder: String? { walker.request.holder }

    func sizeKnown(_ bytes: Int64?, cached: Int64) {
        guard let bytes else { return }
        let total = (status.bytesTotal ?? 0) + bytes
        status.bytesTotal = total
        status.resourcesSized += 1
        // Unpinned, what cannot fit the cache limit would push itself out: fail instead of
        // saying done (pinned bytes are kept over it). One resource over the limit is
        // never kept (streamed, not stored): a pinning preload fails for it too.
        let needed = total + Int64(status.resourcesSized) * StoreGroup.entryOverhead
        let limit = preloader.engine.store.maxBytes
        let neverKept = bytes > limit
        guard needed > limit, !walker.request.pin || neverKept, tooLarge == nil else { return }
        let message = neverKept ? "one resource of \(bytes) bytes is larger than the cache limit (\(limit)); it is never kept, pinned or not"
            : "needs at least \(needed) bytes; the cache limit is \(limit)"
        let failure = PreloadFailure.fetch(url: status.url, code: HTTPCacheError.Code.tooLarge.rawValue, message: message)
        tooLarge = failure
        // After this fetch's callback: stopping fetches from inside one is not re-entrant.
        preloader.engine.loop.executeLater { [weak self] in self?.send(.abort(failure)) }
    }

    /// The failure of a run that cannot fit, once found (its abort runs after the current callback).
    private var tooLarge: PreloadFailure?

    /// Bytes between walker events are reported at most every few hundred KB.
    private var lastReportedBytes: Int64 = 0

    func bytesFetched(_ count: Int64) {
        status.bytesDone += count
        guard status.bytesDone - lastReportedBytes >= 256 << 10 else { return }
        lastReportedBytes = status.bytesDone
        report()
    }

    func fetchEnded(_ fetch: PreloadFetch, _ outcome: Result<[UInt8]?, PreloadFailure>, finalURL: String?) {
        guard fetches.removeValue(forKey: fetch.item.id) != nil else { return }
        preloader.fetchGone(fetch)
        switch outcome {
        case .success(let body): send(.fetched(id: fetch.item.id, body: body, finalURL: finalURL))
        case .failure(let failure): send(.fetchFailed(id: fetch.item.id, failure))
        }
    }
}

/// Runs an engine's preloads at low priority: at most `--download-parallel` fetches, none started while a
/// client is served (running ones go on, sharing downloads). Prefetches go first and start beside players
/// served from the cache, not while a player's own origin download runs. Loop thread only.
package final class Preloader {
    unowned let engine: Engine
    private let logger: Logger
    private var active: [ObjectIdentifier: PreloadFetch] = [:]
    private var waiting: [PreloadFetch] = []
    private var runs: [Int: PreloadRun] = [:]
    private var nextID = 0
    /// The last status of finished preloads (the newest 256), for the admin route.
    private var finished: [Int: PreloadStatus] = [:]
    private var closed = false

    init(engine: Engine, logger: Logger) {
        self.engine = engine
        self.logger = logger
        engine.loader.foregroundIdle = { [unowned self] in self.admit() }
    }

    /// Starts a preload, returning its id; `onUpdate` gets its status on progress and at its `.finished` end.
    @discardableResult
    package func start(_ request: PreloadRequest, window: Int = 2,
                       onUpdate: @escaping (PreloadStatus) -> Void = { _ in }) -> Int {
        nextID += 1
        let id = nextID
        guard !closed else {
            var status = PreloadStatus(id: id, url: request.url)
            status.phase = .finished(.closed)
            finished[id] = status
            onUpdate(status)
            return id
        }
        logger.info("preload started", metadata: ["id": "\(id)", "url": "\(request.url)",
                                                  "range": "\(request.range.map { "\($0)" } ?? "all")",
                                                  "pin": "\(request.pin)"])
        let run = PreloadRun(id: id, request: request, window: window, preloader: self, onUpdate: onUpdate)
        runs[id] = run
        run.send(.start)
        return id
    }

    package func cancel(_ id: Int) { runs[id]?.send(.cancel) }

    /// The status of a running or recently finished preload.
    package func status(_ id: Int) -> PreloadStatus? { runs[id]?.status ?? finished[id] }

    private lazy var hints = HintFetches(preloader: self)
    /// Hint (CMCD nor/nrr) fetches that ended, by whether they brought the object.
    package private(set) var hintsFetched: UInt64 = 0
    package private(set) var hintsFailed: UInt64 = 0

    /// Fetches a player's named next object in the background (`HintFetches`), one fetch
    /// per hint in flight. A transparent client's `clientFields` and `separateEntry`
    /// (its own entry) make it fetched and kept as its next request would be.
    package func fetchHint(_ hint: CMCDHint, clientFields: HTTPHeaders? = nil, separateEntry: Bool = false) -> HintOutcome {
        guard !closed else { return .dropped }
        return hints.fetch(hint, clientFields: clientFields, separateEntry: separateEntry)
    }

    func hintEnded(_ url: String, _ outcome: Result<[UInt8]?, PreloadFailure>) {
        switch outcome {
        case .success:
            hintsFetched += 1
            logger.debug("hinted object fetched", metadata: ["url": "\(url)"])
        case .failure(let failure):
            hintsFailed += 1
            logger.debug("hinted object not fetched", metadata: ["url": "\(url)", "error": "\(failure.message)"])
        }
    }

    /// Cancels every preload (the engine shuts down).
    package func closeAll() {
        closed = true
        hints.cancelAll()
        for run in Array(runs.values) { run.send(.abort(.closed)) }
    }

    /// Queues a fetch behind those of its priority, ahead of lower ones.
    func enqueue(_ fetch: PreloadFetch, priority: PreloadFetch.Priority = .preload) {
        fetch.priority = priority
        waiting.insert(fetch, at: waiting.firstIndex { $0.priority < priority } ?? waiting.endIndex)
        admit()
        if waiting.contains(where: { $0 === fetch }) { logger.debug("preload fetch waits for a slot", metadata: ["url": "\(fetch.item.url)"]) }
    }

    /// Starts waiting fetches while slots are free and no client is served on any loop
    /// (also called when another shard's last foreground reader closed).
    func admit() {
        while active.count < engine.configuration.downloadParallel, let next = waiting.first,
              foregroundIdle || next.priority > .preload && linkFree {
            let fetch = waiting.removeFirst()
            active[ObjectIdentifier(fetch)] = fetch
            fetch.start(engine)
        }
        engine.loader.gauge.preloadsWaiting = !waiting.isEmpty
    }

    private var foregroundIdle: Bool { engine.loader.gauge.isIdle }
    /// No player's own origin download runs: a prefetch may start beside players served
    /// from the cache, else a busy proxy would never prefetch.
    private var linkFree: Bool { !engine.loader.gauge.isDownloading }

    func fetchGone(_ fetch: PreloadFetch) {
        waiting.removeAll { $0 === fetch }
        if active.removeValue(forKey: ObjectIdentifier(fetch)) != nil {
            // Later, not re-entrant into the walker (a fetch may end at once).
            engine.loop.executeLater { [weak self] in self?.admit() }
        }
    }

    func runEnded(_ run: PreloadRun, _ failure: PreloadFailure?) {
        runs[run.id] = nil
        finished[run.id] = run.status
        if finished.count > 256, let oldest = finished.keys.min() { finished[oldest] = nil }
        let status = run.status
        if let failure {
            logger.warning("preload failed", metadata: ["id": "\(run.id)", "url": "\(status.url)", "error": "\(failure.message)"])
        } else {
            logger.info("preload done", metadata: ["id": "\(run.id)", "url": "\(status.url)", "bytes": "\(status.bytesDone)",
                                                   "resources": "\(status.counts.resourcesDone)",
                                                   "segments": "\(status.counts.segmentsDone)",
                                                   "live": "\(status.counts.live)"])
        }
    }
}
