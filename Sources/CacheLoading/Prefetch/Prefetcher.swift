import CacheHTTP
import CacheIO
import Logging

/// Drives prefetching on the first loop: reads the playlists and MPDs players were served (cache only, parsed
/// off the loop), feeds its `PrefetchPlan` what players ask for, and runs the plan's fetches in the
/// preloader's slots. Events raised while acting are queued, never re-entrant. Loop thread only.
package final class Prefetcher {
    unowned let engine: Engine
    private let logger: Logger
    private var plan: PrefetchPlan
    private var events = EventQueue<PrefetchPlan.Event>()
    /// The fetches running or waiting for a slot, by rendition.
    private var fetches: [String: [ObjectIdentifier: PrefetchTask]] = [:]
    /// Playlists and MPDs being read, by URL.
    private var reads: [String: PrefetchTask] = [:]
    /// When each playlist was last read (a live one is read again at most every second).
    private var lastRead: [String: Int64] = [:]
    private var timer: LoopTimer?
    private var closed = false
    /// How often idle renditions are looked for.
    static let tickMilliseconds: UInt64 = 1000

    init(engine: Engine, logger: Logger) {
        self.engine = engine
        self.logger = logger
        plan = PrefetchPlan(limits: Self.limits(engine))
    }

    private static func limits(_ engine: Engine) -> PrefetchPlan.Limits {
        var limits = PrefetchPlan.Limits(depth: engine.configuration.prefetch)
        // A title's share: a quarter of the cache limit of segments nobody asked for yet.
        limits.titleShare = max(1, engine.configuration.maxCacheBytes / 4)
        return limits
    }

    private var ledger: PrefetchLedger? { engine.group?.prefetchLedger }
    private var now: Int64 { engine.store.clock() }

    /// A player was served the playlist or MPD at `url`: what it lists is read.
    package func manifestServed(_ url: String) {
        guard !closed, plan.limits.depth > 0, reads[url] == nil else { return }
        let at = now
        if let last = lastRead[url], at - last < 1000, at >= last { return }
        if lastRead.count > 4096 { lastRead.removeAll() }
        lastRead[url] = at
        let task = PrefetchTask(purpose: .manifest(url: url), prefetcher: self)
        // What the player got, from the cache: never an origin request of its own.
        let fetch = PreloadFetch(item: PreloadItem(id: 0, url: url, range: nil, role: .root, cachedOnly: true), run: task)
        task.fetch = fetch
        reads[url] = task
        engine.preloader.enqueue(fetch, priority: .prefetch)
    }

    /// A player asked for `url` (a GET through the proxy, in any mode).
    package func requested(_ url: String) {
        guard !closed else { return }
        // Counted used here, in order with the prefetches' starts (a player may join one before its head).
        if plan.knows(url) { ledger?.requested(engine.storeKey(for: url)) }
        send(.requested(url: url, now: now))
        // Waiting prefetches may start now (see `Preloader.admit`).
        engine.preloaderIfMade?.admit()
    }

    /// `--prefetch` or the cache limit changed (a reload).
    func reconfigure() { send(.limitsChanged(Self.limits(engine))) }

    /// Stops every fetch (the engine shuts down).
    func close() {
        closed = true
        for rendition in Array(fetches.keys) { perform(.stop(rendition: rendition)) }
        for task in reads.values { task.fetch?.cancel() }
        reads.removeAll()
        timer?.cancel()
        timer = nil
    }

    private func send(_ event: PrefetchPlan.Event) {
        guard events.push(event) else { return }
        while let next = events.next() { for action in plan.handle(next) { perform(action) } }
        watchIdle()
    }

    private func perform(_ action: PrefetchPlan.Action) {
        switch action {
        case .fetch(let item):
            guard mayFetch(item) else {
                logger.debug("prefetch skipped: another origin", metadata: ["url": "\(item.url)", "title": "\(item.title)"])
                return send(.failed(item))  // the rendition pauses, as for a refusal
            }
            let task = PrefetchTask(purpose: .item(item), prefetcher: self)
            let role: PreloadItem.Role = item.isSegment ? .segment : .key
            let fetch = PreloadFetch(item: PreloadItem(id: 0, url: item.url, range: item.resource.range, role: role), run: task)
            task.fetch = fetch
            fetches[item.rendition, default: [:]][ObjectIdentifier(task)] = task
            logger.debug("prefetch", metadata: ["url": "\(item.url)", "rendition": "\(item.rendition)"])
            engine.preloader.enqueue(fetch, priority: .prefetch)
        case .stop(let rendition):
            guard let stopped = fetches.removeValue(forKey: rendition) else { return }
            for task in stopped.values {
                guard let fetch = task.fetch else { continue }
                fetch.cancel()
                engine.preloader.fetchGone(fetch)
                if case .item(let item) = task.purpose, task.started { ledger?.forget(engine.storeKey(for: item.url)) }
            }
            logger.debug("prefetch stopped", metadata: ["rendition": "\(rendition)", "fetches": "\(stopped.count)"])
        }
    }

    /// Whether the item may be fetched at all (see `prefetchOwnOriginOnly`).
    private func mayFetch(_ item: PrefetchItem) -> Bool {
        guard engine.configuration.prefetchOwnOriginOnly else { return true }
        guard let url = OriginURL.parse(item.url), let title = OriginURL.parse(item.title) else { return false }
        return url.authorityKey == title.authorityKey
    }

    /// The idle timer runs while a rendition plays.
    private func watchIdle() {
        if plan.isPlaying, timer == nil, !closed {
            timer = LoopTimer(on: engine.loop, after: Self.tickMilliseconds, repeat: Self.tickMilliseconds) { [weak self] in
                guard let self else { return }
                self.send(.tick(now: self.now))
            }
        } else if !plan.isPlaying, let timer {
            timer.cancel()
            self.timer = nil
            logger.debug("prefetch: nothing playing")
        }
    }

    /// A prefetch's head: what it lacked comes from the origin now.
    fileprivate func headKnown(_ task: PrefetchTask) {
        guard case .item(let item) = task.purpose, item.isSegment, let size = task.size, task.cached < size,
              !plan.playerReached(item) else { return }
        task.started = true
        ledger?.started(engine.storeKey(for: item.url))
    }

    fileprivate func ended(_ task: PrefetchTask, _ outcome: Result<[UInt8]?, PreloadFailure>, finalURL: String?) {
        if let fetch = task.fetch { engine.preloader.fetchGone(fetch) }
        switch task.purpose {
        case .manifest(let url):
            reads[url] = nil
            guard case .success(let body?) = outcome else { return }
            read(body, url: url, finalURL: finalURL ?? url)
        case .item(let item):
            guard fetches[item.rendition]?.removeValue(forKey: ObjectIdentifier(task)) != nil else { return }
            if fetches[item.rendition]?.isEmpty ?? false { fetches[item.rendition] = nil }
            switch outcome {
            case .success:
                let bytes = max(0, (task.size ?? 0) - task.cached)
                if task.started { ledger?.stored(bytes: bytes) }
                logger.debug("prefetched", metadata: ["url": "\(item.url)", "bytes": "\(bytes)"])
                send(.fetched(item, bytes: bytes))
            case .failure(let failure):
                if task.started { ledger?.forget(engine.storeKey(for: item.url)) }
                logger.info("prefetch failed: the rendition pauses",
                            metadata: ["url": "\(item.url)", "rendition": "\(item.rendition)", "error": "\(failure.message)"])
                send(.failed(item))
            }
        }
    }

    /// Its renditions go to the plan, parsed off the loop (a long playlist lists thousands).
    private func read(_ body: [UInt8], url: String, finalURL: String) {
        let (family, now) = (plan.family(of: url), self.now)
        engine.loop.offload({ Self.parse(body, url: url, finalURL: finalURL, family: family, now: now) }, done: { [weak self] read in
            guard let self, !self.closed else { return }
            switch read {
            case .families(let families): self.send(.familiesRead(families))
            case .renditions(let renditions): self.send(.renditionsRead(renditions, now: self.now))
            case .nothing(let error?):
                self.logger.debug("prefetch: playlist not read", metadata: ["url": "\(url)", "error": "\(error)"])
            case .nothing(nil): break
            }
        })
    }

    /// What a playlist or MPD tells prefetching.
    private enum Read: Sendable {
        case families([String: PrefetchFamily])
        case renditions([PrefetchRendition])
        case nothing(String?)
    }

    private static func parse(_ body: [UInt8], url: String, finalURL: String, family: PrefetchFamily?, now: Int64) -> Read {
        if DASH.startsWithMPDRoot(body) {
            do {
                let manifest = try MPDManifest.parse(body, manifestURL: finalURL, now: Double(now) / 1000)
                return .renditions(PrefetchRendition.dash(manifest, url: url))
            } catch {
                return .nothing("\(error)")
            }
        }
        guard HLS.startsWithPlaylistHeader(body) else { return .nothing(nil) }
        do {
            switch try HLSPlaylist.parse(body, playlistURL: finalURL) {
            case .master(let master): return .families(PrefetchRendition.families(master, url: url))
            case .media(let media):
                let parts = PrefetchRendition.hlsParts(media, url: url, family: family)
                return .renditions([PrefetchRendition.hls(media, url: url, family: family)] + (parts.map { [$0] } ?? []))
            }
        } catch {
            return .nothing("\(error)")
        }
    }
}

/// One fetch of the prefetcher: what it is for and what it learnt. Loop thread only.
final class PrefetchTask: PreloadFetchOwner {
    enum Purpose {
        case manifest(url: String)
        case item(PrefetchItem)
    }

    let purpose: Purpose
    private unowned let prefetcher: Prefetcher
    var fetch: PreloadFetch?
    var size: Int64?
    var cached: Int64 = 0
    /// The origin sends part of it: counted as a prefetch.
    var started = false

    init(purpose: Purpose, prefetcher: Prefetcher) {
        self.purpose = purpose
        self.prefetcher = prefetcher
    }

    func sizeKnown(_ bytes: Int64?, cached: Int64) {
        size = bytes
        self.cached = cached
        prefetcher.headKnown(self)
    }

    func fetchEnded(_ fetch: PreloadFetch, _ outcome: Result<[UInt8]?, PreloadFailure>, finalURL: String?) {
        prefetcher.ended(self, outcome, finalURL: finalURL)
    }
}

extension Engine {
    /// A player was served the HLS playlist or DASH MPD at `url`. Any loop.
    package func noteManifestServed(_ url: String) {
        guard let group, group.prefetchLedger.depth > 0 else { return }
        // From now on players' requests are worth telling (the first segment's comes before the playlist is read).
        group.prefetchLedger.playlistsServed = true
        group.run(0) { $0.prefetcher.manifestServed(url) }
    }
}
