import CacheHTTP
import CacheLoading

/// The proxy's counters: loop-confined, so plain integers; other threads get a `MetricsSnapshot`. The origin
/// side is `EngineCounters`'; gauges come in at a snapshot: each figure has one owner.
package struct ProxyMetrics: Sendable, Equatable {
    /// Responses by HTTP status code.
    package var requestsByStatus: [Int: UInt64] {
        var counts = byStatus
        if hits200 > 0 { counts[200, default: 0] += hits200 }
        if hits206 > 0 { counts[206, default: 0] += hits206 }
        return counts
    }
    /// Responses by how the cache answered them.
    package var requestsByCache: [CacheStatus: UInt64] {
        var counts = byCache
        if hits200 + hits206 > 0 { counts[.hit, default: 0] += hits200 + hits206 }
        return counts
    }
    /// Responses by their Cache-Status word (`CacheStatusField.word`: hit, uri-miss, stale…).
    package var requestsByCacheStatus: [String: UInt64] {
        var counts = byCacheStatus
        if hits200 + hits206 > 0 { counts["hit", default: 0] += hits200 + hits206 }
        return counts
    }
    private var byStatus: [Int: UInt64] = [:]
    private var byCache: [CacheStatus: UInt64] = [:]
    private var byCacheStatus: [String: UInt64] = [:]
    /// 200 and 206 hits, apart from the dictionaries (whose updates cost ~350 instructions a response).
    private var hits200: UInt64 = 0
    private var hits206: UInt64 = 0
    /// Response body bytes served from the disk cache.
    package private(set) var bytesFromCache: UInt64 = 0
    /// Clients closed because they accepted no byte for the send timeout.
    package var clientSendTimeouts: UInt64 = 0
    /// Connections handed to the loop that must answer their request (the owner's, or the first's).
    package var loopHandoffs: UInt64 = 0
    /// Hits of another loop's resources this loop answered from the owner's copy (see PlainHit).
    package var hitsOnOtherLoops: UInt64 = 0
    /// Hits of small objects sent from memory, with their head in one send (see PlainHitCache).
    package var hitsFromMemory: UInt64 = 0
    /// Newly accepted connections this loop handed to a less busy one (see LoopLoads).
    package var connectionsBalanced: UInt64 = 0
    package var cmcd = CMCDMetrics()

    package mutating func add(_ other: ProxyMetrics) {
        byStatus.merge(other.byStatus, uniquingKeysWith: +)
        byCache.merge(other.byCache, uniquingKeysWith: +)
        byCacheStatus.merge(other.byCacheStatus, uniquingKeysWith: +)
        hits200 &+= other.hits200
        hits206 &+= other.hits206
        bytesFromCache &+= other.bytesFromCache
        clientSendTimeouts &+= other.clientSendTimeouts
        loopHandoffs &+= other.loopHandoffs
        hitsOnOtherLoops &+= other.hitsOnOtherLoops
        hitsFromMemory &+= other.hitsFromMemory
        connectionsBalanced &+= other.connectionsBalanced
        cmcd.add(other.cmcd)
    }

    /// One response finished (or was cut short): call once per response.
    package mutating func recordResponse(status: Int, cache: CacheStatus, word: String = "bypass") {
        if cache == .hit && word == "hit" {
            if status == 200 { hits200 &+= 1; return }
            if status == 206 { hits206 &+= 1; return }
        }
        byStatus[status, default: 0] += 1
        byCache[cache, default: 0] += 1
        byCacheStatus[word, default: 0] += 1
    }

    /// Body bytes sent to a client from the data file (hits and the cached part of partial answers).
    package mutating func addBytesFromCache(_ count: UInt64) { bytesFromCache &+= count }
}

/// Every metric at one instant; a value that can cross threads and be rendered.
package struct MetricsSnapshot: Sendable, Equatable {
    package var proxy = ProxyMetrics()
    /// The origin side.
    package var engine = EngineCounters()
    package var openConnections = 0
    package var cacheSizeBytes: Int64 = 0
    package var cacheEntries = 0
    package var uptimeSeconds = 0.0
    package var accessLogDropped: UInt64 = 0
    /// Event loops serving clients.
    package var loops = 1
    /// Hinted objects fetched in the background (the preloaders' counts).
    package var hintsFetched: UInt64 = 0
    package var hintsFailed: UInt64 = 0
    /// Segments fetched ahead of players (`--prefetch`) and what became of them.
    package var prefetch = PrefetchCounts()
}

extension MetricsSnapshot {
    /// Adds another loop's counts; uptime, loops, the access log's and prefetch figures stay this one's.
    mutating func add(_ loop: MetricsSnapshot) {
        proxy.add(loop.proxy)
        engine.add(loop.engine)
        openConnections += loop.openConnections
        cacheSizeBytes += loop.cacheSizeBytes
        cacheEntries += loop.cacheEntries
        hintsFetched += loop.hintsFetched
        hintsFailed += loop.hintsFailed
    }

    package var requestsTotal: UInt64 { proxy.requestsByStatus.values.reduce(0, &+) }

    /// HIT / (HIT + MISS + PARTIAL): how often a cacheable request needed no origin (BYPASS does not
    /// count); 0 before the first cacheable request.
    package var hitRatio: Double {
        let byCache = proxy.requestsByCache
        let hits = byCache[.hit, default: 0]
        let lookups = hits + byCache[.miss, default: 0] + byCache[.partial, default: 0]
        return lookups == 0 ? 0 : Double(hits) / Double(lookups)
    }

    /// Bytes from disk / all body bytes served or fetched; 0 when nothing moved.
    package var byteHitRatio: Double {
        let total = Double(proxy.bytesFromCache) + Double(engine.bytesFromOrigin)
        return total == 0 ? 0 : Double(proxy.bytesFromCache) / total
    }
}

// MARK: - Rendering

extension MetricsSnapshot {
    /// The snapshot as one JSON object (no trailing newline). Field names are a stable interface
    /// (`httpcache stats --json`, monitoring scripts); each figure means what its `/metrics` family's
    /// help says. Maps keep a fixed key order (codes ascending) and list every cache status and
    /// Cache-Status word, even at 0; `hit_ratio` has 4 decimals, `uptime_seconds` 3.
    package func json() -> String {
        func object(_ pairs: [(String, UInt64)]) -> String {
            "{" + pairs.map { JSONText.string($0.0) + ":" + String($0.1) }.joined(separator: ",") + "}"
        }
        let byStatus = proxy.requestsByStatus.sorted { $0.key < $1.key }.map { (String($0.key), $0.value) }
        let byCache = CacheStatus.allCases.map { ($0.rawValue, proxy.requestsByCache[$0, default: 0]) }
        let byCacheStatus = CacheStatusField.words.map { ($0, proxy.requestsByCacheStatus[$0, default: 0]) }
        let errors = engine.originErrors.sorted { $0.key < $1.key }.map { ($0.key.rawValue, $0.value) }
        let fields: [(String, String)] = [
            ("uptime_seconds", Self.decimal(uptimeSeconds, digits: 3)),
            ("requests_total", String(requestsTotal)),
            ("requests_by_status", object(byStatus)),
            ("requests_by_cache", object(byCache)),
            ("requests_by_cache_status", object(byCacheStatus)),
            ("hit_ratio", Self.decimal(hitRatio, digits: 4)),
            ("bytes_from_cache", String(proxy.bytesFromCache)),
            ("bytes_from_origin", String(engine.bytesFromOrigin)),
            ("origin_requests", String(engine.originRequests)),
            ("origin_errors", object(errors)),
            ("open_connections", String(openConnections)),
            ("active_downloads", String(engine.activeDownloads)),
            ("evictions", String(engine.evictions)),
            ("cache_size_bytes", String(cacheSizeBytes)),
            ("cache_entries", String(cacheEntries)),
            ("access_log_dropped", String(accessLogDropped)),
            ("loops", String(loops)),
            ("loop_handoffs", String(proxy.loopHandoffs)),
            ("hits_on_other_loops", String(proxy.hitsOnOtherLoops)),
            ("hits_from_memory", String(proxy.hitsFromMemory)),
            ("connections_balanced", String(proxy.connectionsBalanced)),
            ("cmcd", proxy.cmcd.json(hintsFetched: hintsFetched, hintsFailed: hintsFailed)),
            ("prefetch", object([("segments", prefetch.segments), ("bytes", prefetch.bytes), ("used", prefetch.used),
                                 ("evicted_unused", prefetch.evictedUnused)])),
        ]
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// The snapshot in the Prometheus text exposition format 0.0.4: every family with `# HELP` and
    /// `# TYPE`, names prefixed `httpcache_`, counters ending in `_total`; ends with a newline.
    package func prometheus() -> String {
        var text = PrometheusText()
        text.family("httpcache_requests_total", .counter, "Responses sent to clients, by HTTP status code.",
                    proxy.requestsByStatus.sorted { $0.key < $1.key }
                        .map { (["status": String($0.key)], String($0.value)) })
        text.family("httpcache_cache_requests_total", .counter, "Responses sent to clients, by cache status.",
                    CacheStatus.allCases
                        .map { (["cache": $0.rawValue], String(proxy.requestsByCache[$0, default: 0])) })
        text.family("httpcache_cache_status_requests_total", .counter,
                    "Responses sent to clients, by the word of their Cache-Status field (RFC 9211).",
                    CacheStatusField.words
                        .map { (["status": $0], String(proxy.requestsByCacheStatus[$0, default: 0])) })
        text.family("httpcache_cache_bytes_served_total", .counter, "Response body bytes served from the disk cache.",
                    String(proxy.bytesFromCache))
        text.family("httpcache_origin_bytes_fetched_total", .counter, "Body bytes fetched from origins.",
                    String(engine.bytesFromOrigin))
        text.family("httpcache_origin_requests_total", .counter, "Requests sent to origins.",
                    String(engine.originRequests))
        text.family("httpcache_origin_errors_total", .counter, "Failed origin requests, by error code.",
                    engine.originErrors.sorted { $0.key < $1.key }
                        .map { (["code": $0.key.rawValue], String($0.value)) })
        text.family("httpcache_open_connections", .gauge, "Client connections open now.", String(openConnections))
        text.family("httpcache_active_downloads", .gauge, "Origin downloads running now.",
                    String(engine.activeDownloads))
        text.family("httpcache_evictions_total", .counter, "Resources evicted from the cache.",
                    String(engine.evictions))
        text.family("httpcache_cache_size_bytes", .gauge, "Bytes held in the cache.", String(cacheSizeBytes))
        text.family("httpcache_cache_entries", .gauge, "Resources held in the cache.", String(cacheEntries))
        text.family("httpcache_uptime_seconds", .gauge, "Seconds since the proxy started.",
                    Self.decimal(uptimeSeconds, digits: 3))
        text.family("httpcache_access_log_dropped_total", .counter,
                    "Access log lines dropped because the disk could not keep up or failed.", String(accessLogDropped))
        text.family("httpcache_loops", .gauge, "Event loops serving clients.", String(loops))
        text.family("httpcache_loop_handoffs_total", .counter,
                    "Client connections handed to another loop for a request their loop could not answer.",
                    String(proxy.loopHandoffs))
        text.family("httpcache_hits_on_other_loops_total", .counter,
                    "Hits answered on a loop not owning the resource, from the owner's copy of the stored response.",
                    String(proxy.hitsOnOtherLoops))
        text.family("httpcache_hits_from_memory_total", .counter,
                    "Hits of small objects sent from memory, the head and the body in one send.",
                    String(proxy.hitsFromMemory))
        text.family("httpcache_connections_balanced_total", .counter,
                    "New client connections handed to a loop holding fewer (the kernel spreads them by address, not load).",
                    String(proxy.connectionsBalanced))
        proxy.cmcd.prometheus(into: &text, hintsFetched: hintsFetched, hintsFailed: hintsFailed)
        text.family("httpcache_prefetch_segments_total", .counter,
                    "Segments fetched into the cache ahead of players (--prefetch).", String(prefetch.segments))
        text.family("httpcache_prefetch_bytes_total", .counter, "Bytes prefetches fetched from origins.",
                    String(prefetch.bytes))
        text.family("httpcache_prefetch_used_total", .counter, "Prefetched segments a player then asked for.",
                    String(prefetch.used))
        text.family("httpcache_prefetch_evicted_unused_total", .counter,
                    "Prefetched segments evicted before any player asked for them.", String(prefetch.evictedUnused))
        return text.output
    }

    /// Exactly `digits` decimals, valid in JSON and Prometheus (no exponent; non-finite becomes 0).
    static func decimal(_ value: Double, digits: Int) -> String {
        guard value.isFinite, abs(value) < 1e15 else { return "0" }
        var scale: Int64 = 1
        for _ in 0..<digits { scale *= 10 }
        let scaled = Int64((value * Double(scale)).rounded())
        let sign = scaled < 0 ? "-" : ""
        let whole = String(scaled.magnitude / UInt64(scale))
        guard digits > 0 else { return sign + whole }
        let fraction = String(scaled.magnitude % UInt64(scale))
        return sign + whole + "." + String(repeating: "0", count: digits - fraction.count) + fraction
    }
}

/// Writes Prometheus text exposition format 0.0.4, one family at a time.
struct PrometheusText {
    enum Kind: String { case counter, gauge }

    private(set) var output = ""

    /// A family with one unlabelled sample.
    mutating func family(_ name: String, _ kind: Kind, _ help: String, _ value: String) {
        family(name, kind, help, [([:], value)])
    }

    /// A family with labelled samples (possibly none: HELP and TYPE still say it exists).
    mutating func family(_ name: String, _ kind: Kind, _ help: String, _ samples: [([String: String], String)]) {
        output += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
        for (labels, value) in samples {
            output += name
            if !labels.isEmpty {
                let pairs = labels.sorted { $0.key < $1.key }.map { "\($0.key)=\"\(Self.escape($0.value, quote: true))\"" }
                output += "{" + pairs.joined(separator: ",") + "}"
            }
            output += " " + value + "\n"
        }
    }

    /// A histogram: cumulative `buckets` (upper bound text, count), their sum and count.
    mutating func histogram(_ name: String, _ help: String, buckets: [(String, UInt64)], sum: String, count: UInt64) {
        output += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) histogram\n"
        for (bound, cumulative) in buckets { output += "\(name)_bucket{le=\"\(bound)\"} \(cumulative)\n" }
        output += "\(name)_sum \(sum)\n\(name)_count \(count)\n"
    }

    /// HELP text escapes backslash and line feed; label values (`quote`) double quotes too.
    static func escapeHelp(_ value: String) -> String { escape(value, quote: false) }

    private static func escape(_ value: String, quote: Bool) -> String {
        var out = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"" where quote: out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
