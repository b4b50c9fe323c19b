import CacheHTTP
import CacheIO
import CacheLoading
import CacheProxy
import CacheStorage
import Glibc
import Logging

/// An open cache: the folder (locked for this process), its downloads and origin connections, on
/// event-loop threads of its own. Works without an HTTP server; `serve()` adds the proxy, and
/// in-process readers and preloads share the downloads.
///
/// ```swift
/// let cache = try MediaCache(configuration: .init(cacheDirectory: "/var/cache/httpcache"))
/// try cache.serve()
/// let url = try cache.proxyURL(for: "https://example.com/movie.mp4")
/// // hand `url` to the player …
/// cache.close()
/// ```
/// All methods are thread-safe.
public final class MediaCache: Sendable {
    /// The configuration in force: as opened, then as `reconfigure(_:)` changed it.
    public var configuration: HTTPCacheConfiguration { current.withLock { $0 } }
    let current: Locked<HTTPCacheConfiguration>
    let logger: Logger
    let engines: EngineGroup  // one engine per loop, each owning the resources whose cache key hashes to it
    /// The open-file limit shared out at start (clients, origins, data files).
    let descriptors: DescriptorBudget
    let serving = Locked<Serving>(Serving())
    let readers = ReaderRegistry()

    struct Serving: Sendable {
        var servers: [LoopBound<ProxyServer>] = []  // each loop's server, by shard; empty until `serve()`
        var port: Int?
        var closed = false
        /// Signals watched for `watch(signals:_:)`, on the first loop.
        var signalWatchers: [LoopBound<SignalWatcher>] = []
    }

    /// Opens the cache folder (creating it if needed) and takes its lock. Throws `.invalidArgument`
    /// for a configuration `validate()` refuses, `.busy` while another process or cache has the folder.
    public init(configuration: HTTPCacheConfiguration, logger: Logger = Logger(label: "httpcache")) throws(HTTPCacheError) {
        try configuration.validate()
        current = Locked(configuration)
        self.logger = logger
        var loops: [EventLoop] = []
        for _ in 0..<configuration.loops {
            do { loops.append(try EventLoop()) } catch {
                for loop in loops { loop.shutdown() }
                throw HTTPCacheError(.noMemory, "cannot start an event loop: \(error)")
            }
        }
        // Counted once the loops exist (their descriptors are then reserved).
        let descriptors = DescriptorBudget.forThisProcess(loops: loops.count,
                                                          requestedClients: configuration.maxClientConnections,
                                                          raisingLimit: configuration.ownsProcess)
        self.descriptors = descriptors
        logger.debug("descriptor budget", metadata: [
            "limit": "\(descriptors.limit)", "reserved": "\(descriptors.reserved)",
            "clients": "\(descriptors.clientConnections)", "origins": "\(descriptors.originConnections)",
            "dataFiles": "\(descriptors.dataFiles)", "loops": "\(loops.count)"])
        var configured = configuration.proxyConfiguration.engine
        configured.upstream.maxConnections = DescriptorBudget.perLoop(descriptors.originConnections, loops: loops.count)
        configured.descriptors = descriptors
        configured.playlistURIHook = configuration.playlistURIHook
        configured.manifestURLHook = configuration.manifestURLHook
        // What a LAN proxy without an allow-list signs in a playlist, its own origin only, is all it prefetches.
        configured.servesLAN = AccessPolicy.mode(forBindHost: configuration.proxyConfiguration.host) == .lan
        let decryption = HTTPCacheConfiguration.lookup(configuration.decryption)
        do {
            engines = try EngineGroup(loops: loops, configuration: configured, logger: logger) { engine in
                engine.decryption = decryption
            }
        } catch {
            for loop in loops { loop.shutdown() }
            if let error = error as? StorageError { throw HTTPCacheError(error) }
            throw HTTPCacheError(.invalidArgument, "cannot open the cache: \(error)")
        }
        let resumes = configuration.resumesDownloads
        _ = engines.submitAndWait(0) { engine in
            let downloads = engine.downloads  // read from the folder now
            if resumes { downloads.startQueued() }
        }
    }

    deinit { close() }

    /// Starts the HTTP proxy on the configured host and port (a server per loop); returns once
    /// connections are accepted. Serving twice does nothing.
    public func serve() throws(HTTPCacheError) {
        try serving.withLock { (serving: inout Serving) throws(HTTPCacheError) in
            guard !serving.closed else { throw HTTPCacheError(.closed, "the cache is closed") }
            guard serving.servers.isEmpty else { return }
            let configuration = self.configuration.proxyConfiguration
            if let problem = configuration.problem { throw HTTPCacheError(.invalidArgument, problem) }
            // The first server listens first: its port (when the configured one is 0) is the others'.
            var servers: [LoopBound<ProxyServer>] = []
            var port = configuration.port
            for index in 0..<engines.count {
                let server: LoopBound<ProxyServer>
                do throws(HTTPCacheError) {
                    server = try makeServer(index, joining: servers.first, port: port)
                } catch {
                    Self.stop(servers)
                    throw error
                }
                if index == 0 { port = server.loop.submitAndWait { server.value.port } ?? 0 }
                servers.append(server)
            }
            // Each server learns of all (each touched on its own loop).
            let all = servers
            for server in servers { _ = server.loop.submitAndWait { server.value.join(all) } }
            serving.servers = servers
            serving.port = port
        }
    }

    /// Starts shard `index`'s server: the first (`home` nil) or one joining it on `port`.
    private func makeServer(_ index: Int, joining home: LoopBound<ProxyServer>?,
                            port: Int) throws(HTTPCacheError) -> LoopBound<ProxyServer> {
        var configured = self.configuration.proxyConfiguration
        configured.maxClientConnections = descriptors.clientConnections
        let configuration = configured
        let loop = engines.loops[index]
        let made = engines.submitAndWait(index) { engine -> Result<LoopBound<ProxyServer>, HTTPCacheError> in
            do {
                // The first server is only read here for its settings, never touched off its loop.
                let server = try home.map { try ProxyServer(joining: $0.unchecked, engine: engine, port: port) }
                    ?? ProxyServer(engine: engine, configuration: configuration)
                return .success(LoopBound(server, loop: loop))
            } catch let error as IOError where error.code == -EADDRINUSE {
                // Its own code: the usual first-run mistake, not a cache-folder fault.
                let address = OriginURL.authority(host: configuration.host, port: port)
                return .failure(HTTPCacheError(.addressInUse,
                                               "cannot listen on \(address): another program listens on that port (choose another with --port, or 0 for a free one)"))
            } catch {
                return .failure(HTTPCacheError(.io, "cannot listen on \(configuration.host):\(port): \(error)"))
            }
        }
        return try made.closedIfNil()
    }

    /// Stops servers and their clients; the first loop's last (it closes the access log).
    private static func stop(_ servers: [LoopBound<ProxyServer>]) {
        for server in servers.reversed() { _ = server.loop.submitAndWait { server.value.stop() } }
    }

    /// The port the proxy listens on; nil until `serve()`.
    public var port: Int? { serving.withLock { $0.port } }

    /// The proxy URL that makes a player fetch `originURL` through this cache's proxy. Throws
    /// `.invalidArgument` before `serve()` or for a non-http(s) URL, `.closed` once closed.
    public func proxyURL(for originURL: String) throws(HTTPCacheError) -> String {
        let port = try serving.withLock { (serving: inout Serving) throws(HTTPCacheError) -> Int in
            if serving.closed { throw HTTPCacheError(.closed, "the cache is closed") }
            guard let port = serving.port else { throw HTTPCacheError(.invalidArgument, "the proxy is not serving: call serve() first") }
            return port
        }
        // A LAN-mode proxy serves signed URLs only; the key is in the folder.
        let lan = AccessPolicy.mode(forBindHost: configuration.host) == .lan
        return try Self.proxyURL(for: originURL, host: configuration.host, port: port,
                                 signing: lan ? (configuration.cacheDirectory, engines.stores.keys) : nil)
    }

    /// The proxy URL of an http(s) `originURL` for a proxy at host:port. With `signingFolder` (the
    /// proxy's cache folder) it is signed with the folder's key (made on first use), as a LAN-mode
    /// proxy requires; an encrypted folder needs its `encryptionKey` (`.key` without or wrong).
    public static func proxyURL(for originURL: String, host: String, port: Int, signingFolder: String? = nil,
                                encryptionKey: [UInt8]? = nil) throws(HTTPCacheError) -> String {
        var keys: FolderKeys?
        if let signingFolder, FolderKeys.isEncrypted(signingFolder) || encryptionKey != nil {
            do { keys = try FolderKeys.open(root: signingFolder, userKey: encryptionKey, isNew: false) } catch {
                throw HTTPCacheError(error)
            }
        }
        return try proxyURL(for: originURL, host: host, port: port, signing: signingFolder.map { ($0, keys) })
    }

    private static func proxyURL(for originURL: String, host: String, port: Int,
                                 signing: (folder: String, keys: FolderKeys?)?) throws(HTTPCacheError) -> String {
        var signature: String?
        if let signing {
            do {
                signature = URLSigner(key: try URLSigningKey.loadOrCreate(folder: signing.folder, keys: signing.keys))
                    .signature(forOrigin: originURL)
            } catch {
                throw HTTPCacheError(error.code == EKEYREJECTED ? .key : .io, "cannot sign the URL: \(error.description)")
            }
        }
        guard let path = ProxyURL.path(forOrigin: originURL, signature: signature) else {
            throw HTTPCacheError(.invalidArgument, "not an http or https URL: \(originURL)")
        }
        return "http://" + OriginURL.authority(host: host, port: port) + path
    }

    /// The longest request target (proxy URL path) accepted: the request line, "GET " and
    /// " HTTP/1.1" included, is at most `HeadLimits.maxRequestLine` bytes; a longer one gets 414.
    public static let longestProxyPath = HeadLimits().maxRequestLine - "GET  HTTP/1.1".utf8.count

    /// Whether a proxy bound to `host` is in loopback mode (else LAN mode: signed URLs only).
    public static func isLoopback(host: String) -> Bool { LoopbackHost.contains(host) }

    /// Stops serving, ends every connection and download, writes the metadata and releases the
    /// folder. Returns when everything is closed.
    public func close() {
        let servers: [LoopBound<ProxyServer>]? = serving.withLock { serving in
            guard !serving.closed else { return nil }
            serving.closed = true
            serving.port = nil
            defer { serving.servers = [] }
            return serving.servers
        }
        guard let servers else { return }
        Self.stop(servers)  // every server first: none hands work to an engine that has stopped
        // Readers next: blocked reads return .closed, their sources close before the engines stop.
        readers.closeAll()
        _ = engines.submitToAll { $0.shutdown() }
        for loop in engines.loops { loop.shutdown() }
        // Unlock now, not at deinit: the folder may be reopened while the closed cache is referenced.
        engines.stores.lock.release()
    }

    /// Runs `body` on the loop of the engine owning `url` and waits; nil once closed.
    func onOwner<T: Sendable>(of url: String, _ body: @escaping @Sendable (Engine) -> T) -> T? {
        engines.submitAndWait(engines.shard(ofURL: url), body)
    }

    package var operations: CacheOperations {
        CacheOperations(stores: engines.storesByShard, group: engines.stores, cacheKey: configuration.storeCacheKey)
    }

    // MARK: cache operations (the admin routes run the same `CacheOperations`)

    /// Where the proxy serving the folder at `path` listens, and its admin token (from the lock
    /// file); nil when none does. Throws `.io` for an unreadable lock file (another user's proxy?).
    public static func servingProxy(of path: String) throws(HTTPCacheError) -> (address: String, token: String)? {
        if access(path + "/lock", R_OK) != 0, errno != ENOENT {
            throw HTTPCacheError(.io, "cannot read \(path)/lock: \(FileIO.errorText())")
        }
        guard let owner = CacheLock.readOwner(folder: path), let address = owner.address,
              let token = owner.token else { return nil }
        return (address, token)
    }

    /// Re-encrypts the folder in place from `oldKey` to `newKey` (32 bytes each) under a new content
    /// key, so the old key opens nothing. Crash-safe: interrupted, the folder refuses to open until
    /// the same rekey runs again. The folder must not be open (`.busy`); a wrong old key is `.key`,
    /// nothing changed. The next start reads every entry once. `progress` follows each batch.
    @discardableResult
    public static func rekey(cacheDirectory: String, oldKey: [UInt8], newKey: [UInt8],
                             progress: @escaping (RekeySummary) -> Void = { _ in }) throws(HTTPCacheError) -> RekeySummary {
        guard oldKey.count == 32, newKey.count == 32 else {
            throw HTTPCacheError(.invalidArgument, "encryption keys are 32 bytes")
        }
        do {
            let lock = try CacheLock(folder: cacheDirectory)
            defer { withExtendedLifetime(lock) {} }
            let summary = try FolderRekey.run(root: cacheDirectory, oldKey: oldKey, newKey: newKey) {
                progress(RekeySummary($0))
            }
            return RekeySummary(summary)
        } catch {
            throw HTTPCacheError(error)
        }
    }

    /// Every cache entry, most recently used first.
    public func cachedResources() -> [CachedResource] { operations.wait(operations.list).entries.map(CachedResource.init) }
    /// Bytes held by the cache.
    public func cacheSize() -> Int64 { operations.wait(operations.list).totalBytes }

    /// Removes one entry (one in use goes once its readers are done); `.notFound` when not cached.
    public func removeResource(for url: String) throws(HTTPCacheError) {
        try operations.wait { operations.remove(url: url, $0) }.get()
    }

    /// Purges every stored variant of `url` at once, even in use (new requests fetch it again,
    /// responses in flight end cleanly); returns how many, `.notFound` when none was stored.
    @discardableResult
    public func purge(url: String) throws(HTTPCacheError) -> Int {
        try operations.wait { operations.purge(url: url, $0) }.get()
    }

    /// Purges every entry whose URL starts with `prefix`; returns how many.
    @discardableResult
    public func purge(prefix: String) -> Int { operations.wait { operations.purge(prefix: prefix, $0) } }

    /// Purges every entry download `id` holds (also held by others), then removes the download;
    /// returns how many entries, `.notFound` when there is no such download.
    @discardableResult
    public func purge(download id: String) throws(HTTPCacheError) -> Int {
        let purged = operations.wait { operations.purge(holder: DownloadRecord.holder(of: id), $0) }
        _ = try downloadRecordCall { $0.remove(id) }
        return purged
    }

    /// Removes every entry.
    public func removeAllResources() { operations.wait { done in operations.removeAll { done(()) } } }

    /// Copies a completely cached resource to `path` (mode 0600, independent of the cache,
    /// plaintext); `.notFound` when not cached, `.range` when incomplete.
    public func exportResource(for url: String, to path: String) async throws(HTTPCacheError) {
        try await operations.answer { operations.export(url: url, to: path, $0) }.get()
    }

    /// Makes a copy of a local file the cached copy of `url` (http or https); the file stays
    /// independent of the cache (the copy is encrypted in an encrypted folder).
    public func importResource(for url: String, from path: String, contentType: String? = nil) async throws(HTTPCacheError) {
        try await operations.answer { operations.importFile(path, url: url, contentType: contentType, $0) }.get()
    }

    /// Lets eviction take what a pinning preload of `url` kept; returns how many entries.
    @discardableResult
    public func unpin(_ url: String) -> Int { operations.wait { operations.unpin(url: url, $0) } }

    /// The last origin or cache failure recorded for `url`, if any.
    public func lastError(for url: String) -> String? {
        onOwner(of: url) { $0.loader.lastError(for: url) } ?? nil
    }

    /// Forgets recorded failures (of one URL, or all).
    public func clearLastErrors(for url: String? = nil) {
        if let url {
            _ = onOwner(of: url) { $0.loader.clearLastError(for: url) }
        } else {
            _ = engines.submitToAll { $0.loader.clearLastErrors() }
        }
    }
}

extension Optional {
    /// A loop's answer to a call: its result, or `.closed` when the loop had stopped (nil).
    func closedIfNil<Success>() throws(HTTPCacheError) -> Success where Wrapped == Result<Success, HTTPCacheError> {
        guard let self else { throw HTTPCacheError(.closed, "the cache is closed") }
        return try self.get()
    }
}

extension CacheOperations {
    /// An operation's answer, awaited.
    func answer<T: Sendable>(_ operation: (@escaping @Sendable (T) -> Void) -> Void) async -> T {
        await withCheckedContinuation { continuation in operation { continuation.resume(returning: $0) } }
    }
}
