import CacheIO
import CacheStorage
import Logging
import Synchronization

/// The engines of one folder, one per loop, each owning the resources whose key hashes
/// to it (StoreGroup: what shards share). An engine is touched only on its loop: this
/// type says who owns what and posts work there, locking nothing. Thread-safe.
package final class EngineGroup: Sendable {
    private let engines: [LoopBound<Engine>]
    package let loops: [EventLoop]
    package let stores: StoreGroup
    /// Each shard's store, by shard (for cache operations, on its loop).
    package let storesByShard: [LoopBound<ResourceStore>]
    /// The rate cap of every loop's background downloads (`--download-rate`).
    let rate: RateBucket
    /// Foreground readers of every shard: preloads wait while any is open.
    package let foreground = ReaderGauge()
    /// What prefetches stored and what became of it (every loop's hits and evictions tell it).
    package let prefetchLedger = PrefetchLedger()

    package var count: Int { engines.count }

    /// Opens shard i on loop i, in turn, so none serves while another scans the folder. Call off those loops.
    package init(loops: [EventLoop], configuration: EngineConfiguration, logger: Logger,
                 prepare: @escaping @Sendable (Engine) -> Void = { _ in }) throws {
        precondition(!loops.isEmpty)
        let cacheKey = configuration.cacheKey
        let stores = try StoreGroup(root: configuration.cacheDirectory, count: loops.count,
                                    encryptionKey: configuration.encryptionKey, cacheKey: cacheKey)
        var engines: [LoopBound<Engine>] = []
        for (index, loop) in loops.enumerated() {
            let opened = loop.submitAndWait { () -> Result<LoopBound<Engine>, OpenFailure> in
                do {
                    let engine = try Engine(loop: loop, configuration: configuration, logger: logger, stores: stores,
                                            shard: index)
                    prepare(engine)
                    return .success(LoopBound(engine, loop: loop))
                } catch {
                    return .failure(OpenFailure(error: error))
                }
            }
            switch opened {
            case .success(let engine)?: engines.append(engine)
            case .failure(let failure)?: throw failure.error
            case nil: throw StorageError("the event loop stopped")
            }
        }
        self.engines = engines
        self.loops = loops
        self.stores = stores
        // An engine's store never changes: read here, used on its loop only.
        storesByShard = engines.map { LoopBound($0.unchecked.store, loop: $0.loop) }
        rate = RateBucket(rate: configuration.downloadRate, clock: configuration.clock)
        prefetchLedger.depth = configuration.prefetch
        stores.everyShardOpened()
        for (index, engine) in engines.enumerated() {
            _ = engine.loop.submitAndWait { [self] in self.introduce(engine.value, index: index) }
        }
    }

    /// On its loop: preloads (first shard) yield to every shard's readers.
    private func introduce(_ engine: Engine, index: Int) {
        engine.group = self
        engine.loader.gauge = foreground
        engine.loader.backgroundRate = rate
        let ledger = prefetchLedger
        engine.store.onEvict = { ledger.evicted($0) }
        guard index > 0 else { return }
        let first = engines[0]
        let gauge = foreground
        engine.loader.foregroundIdle = {
            guard gauge.preloadsWaiting else { return }
            _ = first.loop.execute { first.value.preloaderIfMade?.admit() }
        }
    }

    package func shard(ofURL url: String) -> Int { stores.shard(ofURL: url) }

    /// Runs `work` with shard `index`'s engine on its loop. False once that loop has stopped.
    @discardableResult
    package func run(_ index: Int, _ work: @escaping @Sendable (Engine) -> Void) -> Bool {
        let engine = engines[index]
        return engine.loop.execute { work(engine.value) }
    }

    /// Runs `body` with shard `index`'s engine on its loop and waits; nil once stopped.
    package func submitAndWait<T: Sendable>(_ index: Int, _ body: @escaping @Sendable (Engine) -> T) -> T? {
        let engine = engines[index]
        return engine.loop.submitAndWait { body(engine.value) }
    }

    /// Runs `body` on every shard, one after another; the answers in shard order (nil: stopped).
    package func submitToAll<T: Sendable>(_ body: @escaping @Sendable (Engine) -> T) -> [T?] {
        (0..<count).map { submitAndWait($0, body) }
    }

    /// Shard `index`'s engine, for a caller on its loop.
    package func engine(_ index: Int) -> Engine { engines[index].value }

    private struct OpenFailure: Error, @unchecked Sendable {
        let error: Error
    }
}

/// Foreground readers and their origin downloads on any shard; preloads wait for none.
package final class ReaderGauge: Sendable {
    private let readers = Atomic<Int>(0)
    private let waiting = Atomic<Bool>(false)

    func opened() { readers.add(1, ordering: .relaxed) }

    /// True when it was the last one open.
    func closed() -> Bool { readers.subtract(1, ordering: .relaxed).newValue == 0 }

    package var isIdle: Bool { readers.load(ordering: .relaxed) == 0 }

    /// While a foreground download runs, downloads only background readers want are held.
    private let foregroundDownloads = Atomic<Int>(0)
    func downloadStarted() { foregroundDownloads.add(1, ordering: .relaxed) }
    func downloadEnded() { foregroundDownloads.subtract(1, ordering: .relaxed) }
    var isDownloading: Bool { foregroundDownloads.load(ordering: .relaxed) > 0 }

    /// Set by the preloader while fetches wait for the readers to be done.
    package var preloadsWaiting: Bool {
        get { waiting.load(ordering: .relaxed) }
        set { waiting.store(newValue, ordering: .relaxed) }
    }
}
