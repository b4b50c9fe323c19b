import ArgumentParser
import FoundationEssentials
import HTTPCache

struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Show the statistics of the proxy serving a cache folder.",
        discussion: """
        Asks the running proxy (found through the folder's lock file) for /stats \
        and prints a table, or the JSON with --json, or /metrics (Prometheus \
        text) with --prometheus. Fails when no proxy serves the folder.
        """
    )

    @Option(name: .customLong("cache-dir"), help: "Cache folder (default: the one `serve` uses).")
    var cacheDirectory: String?
    @Flag(help: "Print the /stats JSON as the proxy sends it.") var json = false
    @Flag(help: "Print the /metrics text (Prometheus exposition format).") var prometheus = false

    func validate() throws {
        if json && prometheus { throw ValidationError("--json and --prometheus exclude each other") }
    }

    func run() throws {
        let path = cacheDirectory ?? defaultCacheDirectory()
        guard let proxy = try MediaCache.servingProxy(of: path) else {
            throw HTTPCacheError(.io, "no proxy is serving the cache folder \(path) "
                                      + "(start one with `httpcache serve --cache-dir \(path)`)")
        }
        let client = AdminClient(address: proxy.address, token: proxy.token)
        let body = try client.request("GET", prometheus ? "/metrics" : "/stats", [:])
        if json || prometheus { return print(String(decoding: body, as: UTF8.self), terminator: "") }
        let stats: ProxyStats
        do {
            stats = try JSONDecoder().decode(ProxyStats.self, from: Data(body))
        } catch {
            throw HTTPCacheError(.io, "unexpected /stats answer from the proxy at \(proxy.address): \(error)")
        }
        print(stats.table(address: proxy.address), terminator: "")
    }
}

/// The `/stats` document (field names as `MetricsSnapshot.json()` writes them).
struct ProxyStats: Decodable {
    var uptimeSeconds: Double
    var requestsTotal: UInt64
    var requestsByStatus: [String: UInt64]
    var requestsByCache: [String: UInt64]
    var hitRatio: Double
    var bytesFromCache: UInt64
    var bytesFromOrigin: UInt64
    var originRequests: UInt64
    var originErrors: [String: UInt64]
    var openConnections: Int
    var activeDownloads: Int
    var evictions: UInt64
    var cacheSizeBytes: Int64
    var cacheEntries: Int
    var accessLogDropped: UInt64
    /// Players' CMCD; absent from a proxy older than it.
    var cmcd: PlayerStats?

    /// The `cmcd` object of `/stats` (the figures the table shows).
    struct PlayerStats: Decodable {
        var requests: UInt64
        var malformed: UInt64
        var rebuffers: UInt64
        var players: Int
        var hints: [String: UInt64]
    }

    // Spelled out: a key strategy would also rewrite the dictionaries' keys.
    enum CodingKeys: String, CodingKey {
        case uptimeSeconds = "uptime_seconds", requestsTotal = "requests_total"
        case requestsByStatus = "requests_by_status", requestsByCache = "requests_by_cache", hitRatio = "hit_ratio"
        case bytesFromCache = "bytes_from_cache", bytesFromOrigin = "bytes_from_origin"
        case originRequests = "origin_requests", originErrors = "origin_errors"
        case openConnections = "open_connections", activeDownloads = "active_downloads", evictions
        case cacheSizeBytes = "cache_size_bytes", cacheEntries = "cache_entries"
        case accessLogDropped = "access_log_dropped", cmcd
    }

    /// A table for people, two columns, ending with a line feed.
    func table(address: String) -> String {
        let cacheOrder = ["HIT", "MISS", "PARTIAL", "BYPASS"]
        let byCache = cacheOrder.map { "\($0) \(requestsByCache[$0, default: 0])" }
            + requestsByCache.keys.filter { !cacheOrder.contains($0) }.sorted().map { "\($0) \(requestsByCache[$0]!)" }
        let byStatus = requestsByStatus.sorted { (Int($0.key) ?? 0) < (Int($1.key) ?? 0) }.map { "\($0.key) \($0.value)" }
        let errors = originErrors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        let rows: [(String, String)] = [
            ("proxy", "\(address), up \(Self.duration(uptimeSeconds))"),
            ("requests", String(requestsTotal)),
            ("  by status", byStatus.isEmpty ? "-" : byStatus.joined(separator: ", ")),
            ("  by cache", byCache.joined(separator: ", ")),
            ("hit ratio", oneDecimal(hitRatio * 100) + " % (HIT of HIT+MISS+PARTIAL)"),
            ("bytes from disk", Self.bytes(Int64(clamping: bytesFromCache))),
            ("bytes from origin", Self.bytes(Int64(clamping: bytesFromOrigin))),
            ("origin requests", String(originRequests)),
            ("origin errors", errors.isEmpty ? "none" : errors.joined(separator: ", ")),
            ("connections", "\(openConnections) open"),
            ("downloads", "\(activeDownloads) active"),
            ("cache", "\(Self.bytes(cacheSizeBytes)) in \(counted(cacheEntries, "entry", plural: "entries"))"),
            ("evictions", String(evictions)),
            ("access log dropped", String(accessLogDropped)),
        ] + playerRows
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0 + String(repeating: " ", count: width + 2 - $0.0.count) + $0.1 + "\n" }.joined()
    }

    /// What players said in their CMCD, when any did.
    private var playerRows: [(String, String)] {
        guard let cmcd, cmcd.requests > 0 else { return [] }
        return [
            ("players (CMCD)", "\(counted(cmcd.players, "session", plural: "sessions")), \(counted(cmcd.rebuffers, "rebuffer")), "
                + "\(cmcd.requests) requests (\(cmcd.malformed) malformed)"),
            ("  next-object hints", "\(cmcd.hints["queued", default: 0]) fetched in the background "
                + "(\(cmcd.hints["fetched", default: 0]) done, \(cmcd.hints["failed", default: 0]) failed)"),
        ]
    }

    /// `1.5 GiB (1610612736 bytes)`; plain bytes below 1 KiB.
    static func bytes(_ count: Int64) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(count)
        var unit = -1
        while abs(value) >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit < 0 ? "\(count) bytes" : oneDecimal(value) + " \(units[unit]) (\(count) bytes)"
    }

    /// `2d 03:04:05` or `03:04:05`.
    static func duration(_ seconds: Double) -> String {
        let total = Int(max(0, seconds))
        func twoDigits(_ n: Int) -> String { n < 10 ? "0\(n)" : String(n) }
        let clock = "\(twoDigits(total / 3600 % 24)):\(twoDigits(total / 60 % 60)):\(twoDigits(total % 60))"
        return total >= 86400 ? "\(total / 86400)d \(clock)" : clock
    }
}
