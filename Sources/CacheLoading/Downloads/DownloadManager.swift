import CacheHTTP
import CacheIO
import CacheStorage
import Logging

/// The folder's downloads, on the first loop: drives each `DownloadLifecycle`, persists records
/// (`DownloadFolder`), runs each as a pinning preload of its selection (sharing the preloader's slots and the
/// pacer) and tells listeners of every change. Events raised while acting are queued. Loop thread only.
package final class DownloadManager {
    unowned let engine: Engine
    private let logger: Logger
    private let folder: DownloadFolder
    private var lifecycles: [String: DownloadLifecycle] = [:]
    /// Each running download's preload id, and a number telling its reports from an earlier run's.
    private var runs: [String: (generation: Int, preload: Int?)] = [:]
    private var generation = 0
    private var persistedAt: [String: UInt64] = [:]
    private var events = EventQueue<(String, DownloadLifecycle.Event)>()
    private var listeners: [Int: (DownloadRecord) -> Void] = [:]
    private var nextListener = 0
    private var closed = false
    /// Whether queued downloads start (false: a CLI command that only edits them).
    private var starts = false

    init(engine: Engine, logger: Logger) {
        self.engine = engine
        self.logger = logger
        folder = DownloadFolder(cacheDirectory: engine.configuration.cacheDirectory, keys: engine.store.group.keys)
        for record in folder.load() { lifecycles[record.id] = DownloadLifecycle(record) }
    }

    /// Starts queued downloads now and whenever one is queued; those left running go on.
    package func startQueued() {
        starts = true
        schedule()
    }

    /// Every download, oldest first.
    package var records: [DownloadRecord] {
        lifecycles.values.map(\.record).sorted { ($0.created, $0.id) < ($1.created, $1.id) }
    }

    package func record(_ id: String) -> DownloadRecord? { lifecycles[id]?.record }

    /// Adds a download (queued); its record is in the folder when this returns.
    package func add(url: String, name: String?, variant: String?, duration: Double?,
                     range: String?) -> Result<DownloadRecord, HTTPCacheError> {
        guard !closed else { return .failure(HTTPCacheError(.closed, "the cache is closed")) }
        var id: String
        repeat { id = String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16) } while lifecycles[id] != nil
        // Control characters never reach a record (a name is printed on terminals and pages).
        let name = name.map(ControlCharacters.removed)
        let record = DownloadRecord(id: id, name: name.flatMap { $0.isEmpty ? nil : $0 } ?? DownloadRecord.defaultName(for: url),
                                    url: url, variant: variant, duration: duration, range: range, created: WallClock.milliseconds())
        if let problem = record.problem { return .failure(HTTPCacheError(.invalidArgument, problem)) }
        do { try folder.save(record) } catch { return .failure(error) }
        lifecycles[id] = DownloadLifecycle(record)
        logger.info("download added", metadata: ["id": "\(id)", "url": "\(url)"])
        announce(record)
        schedule()
        return .success(record)
    }

    package func pause(_ id: String) -> Result<DownloadRecord, HTTPCacheError> { apply(.pause, to: id) }
    package func resume(_ id: String) -> Result<DownloadRecord, HTTPCacheError> { apply(.resume, to: id) }

    /// Removes a download: stops it, and deletes every resource it holds that no other download holds.
    package func remove(_ id: String) -> Result<DownloadRecord, HTTPCacheError> { apply(.remove, to: id) }

    private func apply(_ event: DownloadLifecycle.Event, to id: String) -> Result<DownloadRecord, HTTPCacheError> {
        guard lifecycles[id] != nil else { return .failure(HTTPCacheError(.notFound, "no download \(id)")) }
        send(id, event)
        let record = lifecycles[id]?.record
        if event == .remove { lifecycles[id] = nil }
        schedule()
        return record.map { .success($0) } ?? .failure(HTTPCacheError(.notFound, "no download \(id)"))
    }

    /// Calls `listener` with a download's record at each change and progress report.
    package func subscribe(_ listener: @escaping (DownloadRecord) -> Void) -> Int {
        nextListener += 1
        listeners[nextListener] = listener
        return nextListener
    }

    package func unsubscribe(_ token: Int) { listeners[token] = nil }

    /// Calls `action` when the cache closes; the token forgets it (`forgetOnClose`).
    @discardableResult
    package func onClose(_ action: @escaping () -> Void) -> Int {
        nextListener += 1
        if closed { action() } else { closeActions[nextListener] = action }
        return nextListener
    }

    package func forgetOnClose(_ token: Int) { closeActions[token] = nil }
    private var closeActions: [Int: () -> Void] = [:]

    /// The cache closes: running downloads stop and stay queued for the next start.
    package func closeAll() {
        closed = true
        for id in Array(runs.keys) { send(id, .interrupted) }
        listeners.removeAll()
        let actions = closeActions.values
        closeActions = [:]
        for action in actions { action() }
    }

    private func send(_ id: String, _ event: DownloadLifecycle.Event) {
        guard events.push((id, event)) else { return }
        while let (target, next) = events.next() {
            guard var lifecycle = lifecycles[target] else { continue }
            let actions = lifecycle.handle(next)
            lifecycles[target] = lifecycle
            for action in actions { perform(action, lifecycle.record) }
        }
    }

    private func perform(_ action: DownloadLifecycle.Action, _ record: DownloadRecord) {
        switch action {
        case .fetch:
            fetch(record)
        case .stopFetching:
            if let run = runs.removeValue(forKey: record.id), let preload = run.preload { engine.preloader.cancel(preload) }
            if !closed { engine.loop.executeLater { [weak self] in self?.schedule() } }
        case .persist:
            persist(record)
        case .release:
            release(record)
        case .forget:
            folder.delete(record.id)
            persistedAt[record.id] = nil
            logger.info("download removed", metadata: ["id": "\(record.id)"])
        case .announce:
            if record.state == .running, let last = persistedAt[record.id], engine.loop.nowMilliseconds &- last >= 1000 {
                persist(record)  // progress, at most once a second
            }
            if record.state != .running || record.failure != nil {
                var metadata: Logger.Metadata = ["id": "\(record.id)", "state": "\(record.state.rawValue)",
                                                 "bytes": "\(record.bytesDone)"]
                if let failure = record.failure { metadata["error"] = "\(failure.message)" }
                logger.info("download", metadata: metadata)
            }
            announce(record)
        }
    }

    private func fetch(_ record: DownloadRecord) {
        guard let request = record.preloadRequest else {
            return send(record.id, .ended(HTTPCacheError(.invalidArgument, record.problem ?? "bad selection")))
        }
        generation += 1
        let run = generation
        runs[record.id] = (run, nil)
        let preload = engine.preloader.start(request, window: engine.configuration.downloadParallel) { [weak self] status in
            self?.preloadReported(record.id, run: run, status)
        }
        if runs[record.id]?.generation == run { runs[record.id]?.preload = preload }
    }

    private func preloadReported(_ id: String, run: Int, _ status: PreloadStatus) {
        guard runs[id]?.generation == run else { return }
        // One resource too big to be a playlist: a plain file, whose size is then exact.
        let walkDone = status.counts.resourcesTotal == 1 && (status.bytesTotal ?? 0) > PreloadRead.bodyLimit
        let progress = DownloadProgress(bytesDone: status.bytesDone, bytesKnown: status.bytesTotal,
                                        resourcesSized: status.resourcesSized, counts: status.counts, walkDone: walkDone)
        send(id, .progress(progress, room: room(for: id)))
        guard case .finished(let failure) = status.phase, runs[id]?.generation == run else { return }
        runs[id] = nil
        send(id, .ended(failure.map(HTTPCacheError.init)))
        schedule()
    }

    /// Bytes of the cache limit left for download `id`: what other downloads hold or will hold is taken.
    private func room(for id: String) -> Int64 {
        let others = lifecycles.values.lazy.filter { $0.record.id != id && $0.state != .failed && $0.state != .removed }
            .reduce(Int64(0)) { $0 + $1.record.neededBytes }
        return engine.store.maxBytes - others
    }

    /// Starts queued downloads, oldest first, while fewer than `--download-parallel` run.
    private func schedule() {
        guard starts, !closed else { return }
        let running = lifecycles.values.filter { $0.state == .running }.count
        let queued = records.filter { $0.state == .queued }
        for record in queued.prefix(max(0, engine.configuration.downloadParallel - running)) { send(record.id, .start) }
    }

    private func persist(_ record: DownloadRecord) {
        persistedAt[record.id] = engine.loop.nowMilliseconds
        do { try folder.save(record) } catch {
            logger.warning("cannot save a download's record", metadata: ["id": "\(record.id)", "error": "\(error.message)"])
        }
    }

    /// Lets go of its resources on every store (a presentation's resources hash to all of them).
    private func release(_ record: DownloadRecord) {
        let holder = record.holder
        guard let group = engine.group else {
            _ = engine.store.release(holder: holder)
            return
        }
        for store in group.storesByShard { _ = store.loop.execute { _ = store.value.release(holder: holder) } }
    }

    private func announce(_ record: DownloadRecord) {
        for listener in listeners.values { listener(record) }
    }
}

extension HTTPCacheError {
    /// The API's error for a preload failure.
    package init(_ failure: PreloadFailure) {
        self.init(Code(rawValue: failure.code) ?? .upstream, failure.message)
    }
}
