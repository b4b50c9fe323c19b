import CacheHTTP
import CacheIO
import CacheStorage
import CacheUpstream
import Logging

/// What an engine needs: the folder and its limits, the origin side, the URL → entry map.
package struct EngineConfiguration: Sendable {
    package var cacheDirectory: String
    package var upstream = UpstreamConfiguration()
    /// The most bytes the cache keeps once downloads settle.
    package var maxCacheBytes: Int64
    /// What is cached and how often cached resources are checked.
    package var policy = LoaderPolicy()
    /// The clock (ms since 1970) of freshness and ages (RFC 9111 §4.2), LRU times and
    /// storage-fault back-offs; tests make time pass with their own.
    package var clock: @Sendable () -> Int64 = { WallClock.milliseconds() }
    /// Maps an origin URL to its cache key (several URLs may share one entry).
    package var cacheKey: @Sendable (String) -> String = { $0 }
    /// Replaces the proxy URLs of rewritten playlists (`playlistURIRewriter`); nil: the mode's.
    package var playlistURIHook: HLSURIHook?
    /// The same for the URLs of rewritten DASH manifests.
    package var manifestURLHook: MPDURLHook?
    /// The open-file limit shared out (by `MediaCache`; nil in tests): its `dataFiles`,
    /// split per loop, bounds the store's open data files.
    package var descriptors: DescriptorBudget?
    /// The folder's encryption key (32 bytes; see CacheStorage/FolderKeys); nil: plain.
    package var encryptionKey: [UInt8]?
    /// Fetches at once over every download and preload (all loops).
    package var downloadParallel = 4
    /// Bytes per second for downloads and preloads over all loops together; 0: no cap.
    package var downloadRate: Int64 = 0
    /// Whether CMCD next-object hints (`nor`/`nrr`) are fetched in the background.
    package var followsCMCDHints = true
    /// Segments fetched ahead of a player (`--prefetch`); 0: none.
    package var prefetch = 2
    /// The proxy serves the LAN (signed proxy URLs only); set at start, not reloaded.
    package var servesLAN = false

    /// Prefetch only the title's own origin: LAN mode without an allow-list signs no other origin's URI, so
    /// no client could ask for it (an allow-list refuses by itself). Derived, so a reload changes it.
    package var prefetchOwnOriginOnly: Bool { servesLAN && upstream.destinations.allowsAll }

    package init(cacheDirectory: String, maxCacheBytes: Int64) {
        self.cacheDirectory = cacheDirectory
        self.maxCacheBytes = maxCacheBytes
    }
}

/// The cache at work on one event loop: the store, the loader with its downloads, the upstream client. Needs
/// no server: the proxy, in-process readers, preloads and the C library use it. Loop thread unless stated.
package final class Engine {
    package let loop: EventLoop
    package private(set) var configuration: EngineConfiguration
    package let logger: Logger
    package let store: ResourceStore
    package let loader: Loader
    package var client: UpstreamClient { loader.client }
    /// Preloads (background reads through the same downloads), made on first use.
    package var preloader: Preloader {
        if preloaderIfMade == nil { preloaderIfMade = Preloader(engine: self, logger: logger) }
        return preloaderIfMade!
    }
    package private(set) var preloaderIfMade: Preloader?
    /// The folder's downloads (first loop only), made on first use.
    package var downloads: DownloadManager {
        if downloadsIfMade == nil { downloadsIfMade = DownloadManager(engine: self, logger: logger) }
        return downloadsIfMade!
    }
    package private(set) var downloadsIfMade: DownloadManager?
    /// Prefetching ahead of players (first loop only), made on first use.
    package var prefetcher: Prefetcher {
        if prefetcherIfMade == nil { prefetcherIfMade = Prefetcher(engine: self, logger: logger) }
        return prefetcherIfMade!
    }
    package private(set) var prefetcherIfMade: Prefetcher?

    /// The engines of every loop, this one included: set once as the group opens.
    package internal(set) weak var group: EngineGroup?

    /// Opens shard `shard` of `stores` (the resources whose key hashes to it). Loop thread.
    package init(loop: EventLoop, configuration: EngineConfiguration, logger: Logger, stores: StoreGroup,
                 shard: Int) throws {
        loop.assertInLoop()
        self.loop = loop
        self.configuration = configuration
        self.logger = logger
        store = ResourceStore(group: stores, shard: shard, maxBytes: configuration.maxCacheBytes, loop: loop,
                              logger: logger)
        store.clock = configuration.clock
        if let budget = configuration.descriptors {
            // Half this loop's share for the store's open files, the rest for plain-hit
            // copies (3/4 of the store's cap, see PlainHitCache) and files in flight.
            store.maxOpenFiles = max(4, DescriptorBudget.perLoop(budget.dataFiles, loops: stores.count) / 2)
        }
        let client = try UpstreamClient(loop: loop, configuration: configuration.upstream, logger: logger)
        loader = Loader(store: store, client: client, policy: configuration.policy, logger: logger)
    }

    /// A reload (SIGHUP): `new` has the reloadable options applied (`ServeOption.apply`).
    /// Size limit (evicting at once), origin fields, destinations and background fetches
    /// change for later requests; requests in flight keep what they started with.
    package func reconfigure(_ new: EngineConfiguration) {
        loop.assertInLoop()
        configuration = new
        client.reconfigure(new.upstream)
        store.maxBytes = new.maxCacheBytes
        store.evictIfNeeded()
        loader.backgroundRate.rate = new.downloadRate  // one bucket for the group: every engine sets the same
        group?.prefetchLedger.depth = new.prefetch
        prefetcherIfMade?.reconfigure()
    }

    /// How resources are encrypted at their origins (nil: all plain). Set before serving:
    /// each response or reader range asks it once, when it starts.
    package var decryption: DecryptionLookup?

    package func cacheKey(for url: String) -> String { configuration.cacheKey(url) }
    /// The store's key (hash of the cache key) of an origin URL.
    package func storeKey(for url: String) -> String { store.storeKey(for: cacheKey(for: url)) }

    /// A reader of `url` over `spec` (nil: all), sharing downloads with every reader of
    /// the same bytes. `background` (preloads) yields to the others; `storeKey`: the
    /// hashed key, when known; `request`: the client's fields, for the RFC 9111 rules.
    package func reader(url: OriginURL, spec: ByteRangeSpec?, fields: OriginFields = OriginFields(),
                        storeKey: String? = nil, background: Bool = false,
                        request: HTTPHeaders = HTTPHeaders()) -> ResourceReader {
        loader.reader(url: url, storeKey: storeKey ?? self.storeKey(for: url.string), spec: spec,
                      fields: fields, background: background, request: request)
    }

    /// Cancels every download, closes origin connections and writes all metadata.
    package func shutdown() {
        loop.assertInLoop()
        downloadsIfMade?.closeAll()
        prefetcherIfMade?.close()
        preloaderIfMade?.closeAll()
        loader.cancelAll()
        loader.client.closeAll()
        store.flushAllNow()
    }
}
