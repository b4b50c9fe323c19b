import CacheHTTP
import CacheIO
import CacheStorage
import CacheUpstream
import Logging

/// What an engine needs: the cache folder and its limits, the origin side,
/// and how URLs map to cache entries.
package struct EngineConfiguration: Sendable {
    package var cacheDirectory: String
    package var upstream = UpstreamConfiguration()
    /// The most bytes the cache keeps once downloads settle.
    package var maxCacheBytes: Int64
    /// What is cached and how often cached resources are checked.
    package var policy = LoaderPolicy()
    /// The clock of the cache's time decisions (milliseconds since 1970):
    /// freshness and ages (RFC 9111 §4.2), LRU times, storage-fault back-offs.
    /// The wall clock; tests make time pass with their own.
    package var clock: @Sendable () -> Int64 = { WallClock.milliseconds() }
    /// Maps an origin URL to its cache key (several URLs may share one entry).
    package var cacheKey: @Sendable (String) -> String = { $0 }
    /// Replaces the proxy URLs written into rewritten playlists (the host's
    /// `playlistURIRewriter`); nil: the mode's own.
    package var playlistURIHook: HLSURIHook?
    /// The same for the URLs of rewritten DASH manifests.
    package var manifestURLHook: MPDURLHook?
    /// The process's open-file limit shared out (`MediaCache` computes it
    /// once); nil when the engine runs without one (tests). Its `dataFiles`,
    /// split per loop, is the bound for the store's open data files.
    package var descriptors: DescriptorBudget?
    /// The folder's encryption key (32 bytes), nil for a folder without
    /// encryption (see CacheStorage/FolderKeys).
    package var encryptionKey: [UInt8]?
    /// Fetches at once over every download and preload (all loops).
    package var downloadParallel = 4
    /// Bytes per second for downloads and preloads over all loops together; 0: no cap.
    package var downloadRate: Int64 = 0
    /// Whether CMCD next-object hints (`nor`/`nrr`) are fetched in the background.
    package var followsCMCDHints = true
    /// Segments fetched ahead of a player (`--prefetch`); 0: none.
    package var prefetch = 2
    /// The proxy serves the LAN (signed proxy URLs only). Set at start: the
    /// bind address does not change with a reload.
    package var servesLAN = false

    /// Prefetch only URIs of the title's own origin (scheme, host and
    /// port): LAN mode without an allow-list, where the proxy signs no other
    /// origin's URI a playlist names, so no client could ask for it either.
    /// (With an allow-list the origin client refuses what it does not allow.)
    /// Derived, so a reload that adds or drops the allow-list changes it.
    package var prefetchOwnOriginOnly: Bool { servesLAN && upstream.destinations.allowsAll }

    package init(cacheDirectory: String, maxCacheBytes: Int64) {
        self.cacheDirectory = cacheDirectory
        self.maxCacheBytes = maxCacheBytes
    }
}

/// The cache at work: the folder's store, the loader with its downloads and
/// the upstream client, on one event loop. It runs without any server; the
/// HTTP proxy, in-process readers, preloads and the C library are its
/// clients. Loop thread only, except where stated.
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

    /// The engines of every loop (this one among them): set once as the
    /// group opens (see EngineGroup).
    package internal(set) weak var group: EngineGroup?

    /// Opens shard `shard` of the folder opened as `stores`: the resources
    /// whose cache key hashes to it. Call on the loop thread.
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
            // This loop's share of data files: half for the store's open
            // files, the rest for copies of plain hits (three quarters of the
            // store's cap, see PlainHitCache) and files in flight.
            store.maxOpenFiles = max(4, DescriptorBudget.perLoop(budget.dataFiles, loops: stores.count) / 2)
        }
        let client = try UpstreamClient(loop: loop, configuration: configuration.upstream, logger: logger)
        loader = Loader(store: store, client: client, policy: configuration.policy, logger: logger)
    }

    /// A configuration reload (SIGHUP): `new` is this engine's configuration
    /// with the reloadable options of the new one applied (see
    /// `ServeOption.apply`). The size limit (eviction runs at once when the
    /// cache is now over it), the origin request fields, the allowed
    /// destinations and the background fetches change for every request from
    /// now on; requests in flight keep what they started with.
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

    /// How resources are encrypted at their origins, by URL (nil: all plain).
    /// Set before serving or opening readers: each response or reader range
    /// asks it once, when it starts.
    package var decryption: DecryptionLookup?

    /// The cache key of an origin URL.
    package func cacheKey(for url: String) -> String { configuration.cacheKey(url) }

    /// The store's key (hash of the cache key) of an origin URL.
    package func storeKey(for url: String) -> String { store.storeKey(for: cacheKey(for: url)) }

    /// A reader of `url` over `spec` (nil: the whole resource), sharing downloads
    /// with every other reader of the same bytes.
    /// `background` readers (preloads) yield to the others.
    /// `storeKey` is the hashed cache key when the caller has it already.
    /// `request` is the client's request fields: the cache's freshness,
    /// storing and Vary rules read them (RFC 9111).
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
