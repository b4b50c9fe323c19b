import ArgumentParser
import CacheHTTP
import CacheIO
import Glibc
import HTTPCache
import Logging

@main
struct HTTPCacheCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "httpcache",
        abstract: "A play-while-download HTTP caching proxy for media.",
        discussion: """
            Exit status: 0 on success, 64 for a usage error, and 10 + |code| for an
            HTTPCache error (11 invalid argument, 13 i/o, 14 folder in use, 15 not found,
            16 timed out, 17 canceled, 18 origin failed, 19 TLS, 20 range, 21 closed).
            """,
        subcommands: [Serve.self, URLCommand.self, CacheCommand.self, PreloadCommand.self, StatsCommand.self]
    )

    /// Runs the command; an HTTPCache error exits with its code's status.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let error as HTTPCacheError {
            let line = Array("Error: \(error.message)\n".utf8)
            _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            Glibc.exit(error.exitStatus)
        } catch {
            exit(withError: error)
        }
    }
}

/// Where `serve` keeps its cache unless told otherwise.
func defaultCacheDirectory() -> String {
    if let xdg = getenv("XDG_CACHE_HOME").map({ String(cString: $0) }), !xdg.isEmpty { return xdg + "/httpcache" }
    if let home = getenv("HOME").map({ String(cString: $0) }), !home.isEmpty { return home + "/.cache/httpcache" }
    return "/tmp/httpcache"
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the proxy until SIGINT or SIGTERM.")

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (0 picks a free one).") var port = 0
    @Option(name: .customLong("cache-dir"), help: "Cache folder (default: $XDG_CACHE_HOME/httpcache or ~/.cache/httpcache).")
    var cacheDirectory: String?
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"
    @Option(name: .customLong("connect-timeout"), help: "Seconds to connect to an origin.") var connectTimeout: Double = 10
    @Option(name: .customLong("read-timeout"), help: "Seconds without data from an origin before 504.") var readTimeout: Double = 30
    @Option(name: .customLong("client-timeout"), help: "Seconds a client may accept no byte of its response before it is closed.")
    var clientTimeout: Double = 60
    @Option(name: .customLong("head-timeout"), help: "Seconds a client has to send a whole request head.")
    var headTimeout: Double = 10
    @Option(name: .customLong("max-connections"), help: "Most client connections (default: 80% of the open-file limit).")
    var maxConnections: Int?
    @Option(help: "Event loops (threads) serving clients (default: the number of CPU cores). Hits are answered on every loop; downloads run on one.")
    var loops: Int?
    @Option(name: .customLong("max-cache-size"), help: "Cache size limit: bytes, K/M/G (×1000) or KiB/MiB/GiB (×1024).")
    var maxCacheSize = "500MB"
    @Option(name: .customLong("ignore-query"), help: "A query parameter left out of the cache key (repeatable).")
    var ignoreQuery: [String] = []
    @Option(name: .customLong("revalidate-after"), help: "Seconds a response without explicit freshness (Cache-Control, Expires) stays fresh; overrides the heuristic.")
    var revalidateAfter: Double?
    @Option(name: .customLong("origin"), help: "Reverse-proxy mode: map every request path and query onto this http(s) origin.")
    var origin: String?
    @Option(name: .customLong("log-file"), help: "Also append log lines to this file.")
    var logFile: String?
    @Option(name: .customLong("access-log"), help: "Append one line per response to this file (time, client, method, target, status, bytes, origin bytes, HIT/MISS/PARTIAL/BYPASS, ms).")
    var accessLog: String?
    @Option(name: .customLong("ca-file"), help: "PEM file of extra CA certificates trusted for https origins.")
    var caFile: String?
    @Flag(help: "Do not verify https origins' certificates (logs a warning at every start).") var insecure = false
    @Option(name: .customLong("header"), help: "'Name: value' added to every origin request (repeatable).")
    var extraHeaders: [String] = []
    @Option(name: .customLong("forward-header"), help: "Client request header sent on to the origin (repeatable).")
    var forwardedHeaders: [String] = []
    @Option(name: .customLong("allow-origin"), help: "An origin HOST or HOST:PORT the proxy may fetch from, redirects included; others get 403 (repeatable).")
    var allowedOrigins: [String] = []
    @Option(name: .customLong("max-connections-per-client"), help: "Most connections from one client address (default: half of --max-connections).")
    var maxConnectionsPerClient: Int?
    @Option(name: .customLong("server-name"), help: "Reverse-proxy mode: a public name clients may send as Host; other names get 421 (repeatable).")
    var serverNames: [String] = []
    @Flag(name: .customLong("allow-lan-reverse-proxy"), help: "Allow reverse-proxy mode on a non-loopback --host: every LAN client then reaches the origin with the --header credentials.")
    var allowsLANReverseProxy = false

    func run() throws {
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw ValidationError("unknown log level \(logLevel)")
        }
        // The loop thread does nearly all allocation; the pool and log
        // threads little. Two malloc arenas instead of one per thread keep
        // about 1.5 MB of RSS off a serving proxy (the server only: a host
        // embedding the library keeps its own malloc settings).
        MallocArenas.limit(to: 2)
        guard let maxBytes = ByteSize.parse(maxCacheSize) else {
            throw ValidationError("cannot read the size \(maxCacheSize) (try 500MB or 2GiB)")
        }
        let fileSink = try logFile.map { try LogFileSink(path: $0) }
        LoggingSystem.bootstrap { label in
            var console = StreamLogHandler.standardError(label: label)
            console.logLevel = level
            guard let fileSink else { return console }
            var file = FileLogHandler(label: label, sink: fileSink)
            file.logLevel = level
            return MultiplexLogHandler([console, file])
        }
        var configuration = HTTPCacheConfiguration(cacheDirectory: cacheDirectory ?? defaultCacheDirectory(), host: host, port: port)
        configuration.connectTimeout = connectTimeout
        configuration.readTimeout = readTimeout
        configuration.clientSendTimeout = clientTimeout
        configuration.clientHeadTimeout = headTimeout
        configuration.maxClientConnections = maxConnections
        if let loops, !(1...256).contains(loops) { throw ValidationError("--loops takes 1 to 256") }
        configuration.loops = loops ?? max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        configuration.trimsHeapWhenIdle = true
        configuration.maxCacheSize = maxBytes
        configuration.revalidateAfter = revalidateAfter
        if let origin {
            guard let url = OriginURL.parse(origin), url.pathAndQuery == "/" else {
                throw ValidationError("--origin takes an http or https origin without a path, e.g. https://media.example.com")
            }
            configuration.origin = url.string
        }
        if !ignoreQuery.isEmpty {
            configuration.cacheKey = HTTPCacheConfiguration.ignoringQueryParameters(Set(ignoreQuery))
        }
        configuration.caFile = caFile
        configuration.insecure = insecure
        configuration.extraHeaders = try extraHeaders.map(parseHeader)
        configuration.forwardedHeaders = forwardedHeaders
        configuration.accessLogPath = accessLog
        configuration.allowedOrigins = allowedOrigins
        if let maxConnectionsPerClient, maxConnectionsPerClient < 1 {
            throw ValidationError("--max-connections-per-client takes at least 1")
        }
        configuration.maxConnectionsPerClient = maxConnectionsPerClient
        configuration.serverNames = serverNames
        configuration.allowsLANReverseProxy = allowsLANReverseProxy
        let server = HTTPCacheServer(configuration: configuration)
        // Block the signals here so sigwait below receives them instead of the default action.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        try server.start()
        let shown = host.contains(":") ? "[\(host)]" : host
        print("listening on http://\(shown):\(server.port)")
        fflush(nil)  // all streams: the first line must reach a pipe at once
        var received: Int32 = 0
        sigwait(&signals, &received)
        Logger(label: "httpcache").info("shutting down", metadata: ["signal": "\(received)"])
        server.stop()
    }
}

/// "Name: value" from `--header`.
func parseHeader(_ text: String) throws -> (String, String) {
    guard let colon = text.firstIndex(of: ":") else {
        throw ValidationError("--header wants 'Name: value', got \(text)")
    }
    let name = String(text[..<colon])
    let value = text[text.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
    return (name, String(value))
}

struct URLCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "url", abstract: "Print the proxy URL for an origin URL.")

    @Argument(help: "The origin URL (http or https).") var original: String
    @Option(help: "Port of the proxy.") var port: Int
    @Option(help: "Host of the proxy.") var host = "127.0.0.1"
    @Option(name: .customLong("cache-dir"),
            help: "The proxy's cache folder: signs the URL with its key (needed for a proxy in LAN mode; implied by a non-loopback --host).")
    var cacheDirectory: String?

    func run() throws {
        // A non-loopback proxy serves signed URLs only: sign with the default folder's key then.
        let lan = !HTTPCacheServer.isLoopback(host: host)
        let folder = cacheDirectory ?? (lan ? defaultCacheDirectory() : nil)
        do {
            print(try HTTPCacheServer.proxyURL(for: original, host: host, port: port, signingFolder: folder))
        } catch {
            throw ValidationError("\(error)")
        }
    }
}
