import ArgumentParser
import CacheHTTP
import CacheIO
import Glibc
import HTTPCache
import Logging

@main
struct HTTPCacheCommand: AsyncParsableCommand {
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
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
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
    static let configuration = CommandConfiguration(
        abstract: "Run the proxy until SIGINT or SIGTERM.",
        discussion: "Each option is also an option of the C library's hc_config_set, by the same name.")

    // One property per `ServeOption`, named and explained by it; `given`
    // hands the values to `ServeSettings`, which checks them.
    @Option(name: .customLong("host"), help: .serve("host")) var host: String?
    @Option(name: .customLong("port"), help: .serve("port")) var port: String?
    @Option(name: .customLong("cache-dir"), help: .serve("cache-dir")) var cacheDirectory: String?
    @Option(name: .customLong("log-level"), help: .serve("log-level")) var logLevel: String?
    @Option(name: .customLong("log-file"), help: .serve("log-file")) var logFile: String?
    @Option(name: .customLong("connect-timeout"), help: .serve("connect-timeout")) var connectTimeout: String?
    @Option(name: .customLong("read-timeout"), help: .serve("read-timeout")) var readTimeout: String?
    @Option(name: .customLong("idle-timeout"), help: .serve("idle-timeout")) var idleTimeout: String?
    @Option(name: .customLong("head-timeout"), help: .serve("head-timeout")) var headTimeout: String?
    @Option(name: .customLong("client-timeout"), help: .serve("client-timeout")) var clientTimeout: String?
    @Option(name: .customLong("max-connections"), help: .serve("max-connections")) var maxConnections: String?
    @Option(name: .customLong("loops"), help: .serve("loops")) var loops: String?
    @Option(name: .customLong("max-cache-size"), help: .serve("max-cache-size")) var maxCacheSize: String?
    @Option(name: .customLong("ignore-query"), help: .serve("ignore-query")) var ignoreQuery: [String] = []
    @Option(name: .customLong("revalidate-after"), help: .serve("revalidate-after")) var revalidateAfter: String?
    @Option(name: .customLong("cache-types"), help: .serve("cache-types")) var cacheTypes: String?
    @Option(name: .customLong("cache-status-name"), help: .serve("cache-status-name")) var cacheStatusName: String?
    @Option(name: .customLong("origin"), help: .serve("origin")) var origin: String?
    @Option(name: .customLong("access-log"), help: .serve("access-log")) var accessLog: String?
    @Option(name: .customLong("ca-file"), help: .serve("ca-file")) var caFile: String?
    @Flag(name: .customLong("insecure"), help: .serve("insecure")) var insecure = false
    @Option(name: .customLong("header"), help: .serve("header")) var header: [String] = []
    @Option(name: .customLong("forward-header"), help: .serve("forward-header")) var forwardHeader: [String] = []
    @Option(name: .customLong("allow-origin"), help: .serve("allow-origin")) var allowOrigin: [String] = []
    @Option(name: .customLong("server-name"), help: .serve("server-name")) var serverName: [String] = []
    @Option(name: .customLong("max-connections-per-client"), help: .serve("max-connections-per-client"))
    var maxConnectionsPerClient: String?
    @Flag(name: .customLong("allow-lan-reverse-proxy"), help: .serve("allow-lan-reverse-proxy")) var allowLANReverseProxy = false

    /// The options given, by `ServeOption` name.
    private var given: [(String, [String])] {
        [("host", host), ("port", port), ("log-level", logLevel), ("log-file", logFile),
         ("connect-timeout", connectTimeout), ("read-timeout", readTimeout), ("idle-timeout", idleTimeout),
         ("head-timeout", headTimeout), ("client-timeout", clientTimeout), ("max-connections", maxConnections),
         ("loops", loops), ("max-cache-size", maxCacheSize), ("revalidate-after", revalidateAfter), ("origin", origin),
         ("access-log", accessLog), ("ca-file", caFile), ("insecure", insecure ? "true" : nil),
         ("max-connections-per-client", maxConnectionsPerClient),
         ("allow-lan-reverse-proxy", allowLANReverseProxy ? "true" : nil),
         ("cache-types", cacheTypes), ("cache-status-name", cacheStatusName)].map { ($0.0, $0.1.map { [$0] } ?? []) }
            + [("ignore-query", ignoreQuery), ("header", header), ("forward-header", forwardHeader), ("allow-origin", allowOrigin),
               ("server-name", serverName)]
    }

    /// The settings: the binary's defaults, then every option given, each checked by `ServeOption`.
    func settings() throws -> ServeSettings {
        var settings = ServeSettings(cacheDirectory: cacheDirectory ?? defaultCacheDirectory())
        settings.configuration.loops = min(256, max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        settings.configuration.ownsProcess = true
        for (name, values) in given {
            for value in values {
                do { try settings.set(name, value) } catch { throw ValidationError("--" + error.message) }
            }
        }
        return settings
    }

    func validate() throws { _ = try settings() }

    func run() throws {
        let settings = try settings()
        // The loop thread does nearly all allocation; the pool and log
        // threads little. Two malloc arenas instead of one per thread keep
        // about 1.5 MB of RSS off a serving proxy (the server only: a host
        // embedding the library keeps its own malloc settings).
        MallocArenas.limit(to: 2)
        let fileSink = try settings.logFile.map { path throws(HTTPCacheError) in try LogFileSink(path: path) }
        LoggingSystem.bootstrap { label in
            var console = StreamLogHandler.standardError(label: label)
            console.logLevel = settings.logLevel
            guard let fileSink else { return console }
            var file = FileLogHandler(label: label, sink: fileSink)
            file.logLevel = settings.logLevel
            return MultiplexLogHandler([console, file])
        }
        let cache = try MediaCache(configuration: settings.configuration)
        // Block the signals here so sigwait below receives them instead of the default action.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        try cache.serve()
        let host = settings.configuration.host
        print("listening on http://\(host.contains(":") ? "[\(host)]" : host):\(cache.port ?? 0)")
        fflush(nil)  // all streams: the first line must reach a pipe at once
        var received: Int32 = 0
        sigwait(&signals, &received)
        Logger(label: "httpcache").info("shutting down", metadata: ["signal": "\(received)"])
        cache.close()
    }
}

extension ArgumentHelp {
    /// The help of a `ServeOption`.
    static func serve(_ name: String) -> ArgumentHelp {
        guard let option = ServeOption.named(name) else { fatalError("no serve option \(name)") }
        return ArgumentHelp(option.help, valueName: option.valueName.isEmpty ? nil : option.valueName.lowercased())
    }
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
        let lan = !MediaCache.isLoopback(host: host)
        let folder = cacheDirectory ?? (lan ? defaultCacheDirectory() : nil)
        let url: String
        do {
            url = try MediaCache.proxyURL(for: original, host: host, port: port, signingFolder: folder)
        } catch {
            throw ValidationError("\(error)")
        }
        print(url)
        // The path starts after "http://host:port".
        let path = url.utf8.count - "http://".utf8.count - (url.dropFirst("http://".count).firstIndex(of: "/")
            .map { url.dropFirst("http://".count)[..<$0].utf8.count } ?? 0)
        if path > MediaCache.longestProxyPath {
            let warning = "warning: this URL's path is \(path) bytes; the proxy refuses paths over "
                + "\(MediaCache.longestProxyPath) bytes (414 URI Too Long)\n"
            _ = Array(warning.utf8).withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        }
    }

    func validate() throws {
        if !(1...65535).contains(port) { throw ValidationError("--port takes 1 to 65535; got \(port)") }
    }
}
