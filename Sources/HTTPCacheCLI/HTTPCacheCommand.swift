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
            16 timed out, 17 canceled, 18 origin failed, 19 TLS, 20 range, 21 closed, 22 encryption key, 23 too large for the cache,
            24 address in use).
            """,
        subcommands: [Serve.self, CheckConfig.self, URLCommand.self, CacheCommand.self, PreloadCommand.self,
                      DownloadCommand.self, StatsCommand.self]
    )

    /// Runs the command; an HTTPCache error exits with its code's status.
    static func main() async {
        var ran: ParsableCommand.Type = HTTPCacheCommand.self
        do {
            var command = try parseAsRoot()
            ran = type(of: command)
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let error as HTTPCacheError {
            printError("Error: \(error.message)\n")
            Glibc.exit(error.exitStatus)
        } catch let error as ValidationError where ran != HTTPCacheCommand.self {
            // A subcommand's run() refused its arguments: its usage (ArgumentParser shows the top level's).
            let path = (commandPath(to: ran) ?? [ran._commandName]).joined(separator: " ")
            printError("Error: \(error.message)\nUsage: \(usageString(for: ran))\n  See 'httpcache \(path) --help' for more information.\n")
            Glibc.exit(ExitCode.validationFailure.rawValue)
        } catch {
            exit(withError: error)
        }
    }

    /// The subcommand names from the root down to `target` ("cache list").
    static func commandPath(to target: ParsableCommand.Type,
                            from root: ParsableCommand.Type = HTTPCacheCommand.self) -> [String]? {
        for sub in root.configuration.subcommands {
            if sub == target { return [sub._commandName] }
            if let rest = commandPath(to: target, from: sub) { return [sub._commandName] + rest }
        }
        return nil
    }
}

/// Writes `text` to stderr as it is (no line feed added), unbuffered.
func printError(_ text: String) {
    _ = Array(text.utf8).withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

/// Where `serve` keeps its cache unless told otherwise.
func defaultCacheDirectory() -> String {
    if let xdg = getenv("XDG_CACHE_HOME").map({ String(cString: $0) }), !xdg.isEmpty { return xdg + "/httpcache" }
    if let home = getenv("HOME").map({ String(cString: $0) }), !home.isEmpty { return home + "/.cache/httpcache" }
    return "/tmp/httpcache"
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the proxy until SIGINT, SIGTERM or SIGQUIT.",
        discussion: """
            Each option is also an option of the C library's hc_config_set, by the same name, and \
            a line of the configuration file (--config FILE): `name = value`, one a line, repeatable \
            options repeated, `#` comments; the command line overrides the file (a repeatable option \
            given on the command line replaces the file's list). `httpcache check-config --config FILE` \
            checks a file without starting.

            Signals: SIGHUP re-reads the configuration and applies the options that can change live \
            (\(ServeOption.all.filter(\.isReloadable).map(\.name).joined(separator: ", "))); \
            an invalid file is refused with a log line and the running settings stay. SIGUSR1 reopens \
            the log file and the access log (logrotate's postrotate). SIGQUIT drains: stop accepting, \
            let responses in flight finish for up to --drain-timeout seconds, flush, exit 0. \
            SIGTERM and SIGINT stop at once.
            """)

    @Option(name: .customLong("config"), help: ArgumentHelp("Read options from this file first (one `name = value` a line).",
                                                            valueName: "file"))
    var config: String?

    // One property per `ServeOption`, named after it (`cacheDir`) and explained by it; `given` reads them
    // back. Values are taken as given ("-1" goes to the table, which refuses it, not read as an option).
    @Option(parsing: .unconditional, help: .serve("host")) var host: String?
    @Option(parsing: .unconditional, help: .serve("port")) var port: String?
    @Option(parsing: .unconditional, help: .serve("cache-dir")) var cacheDir: String?
    @Option(parsing: .unconditional, help: .serve("log-level")) var logLevel: String?
    @Option(parsing: .unconditional, help: .serve("log-file")) var logFile: String?
    @Option(parsing: .unconditional, help: .serve("connect-timeout")) var connectTimeout: String?
    @Option(parsing: .unconditional, help: .serve("read-timeout")) var readTimeout: String?
    @Option(parsing: .unconditional, help: .serve("idle-timeout")) var idleTimeout: String?
    @Option(parsing: .unconditional, help: .serve("head-timeout")) var headTimeout: String?
    @Option(parsing: .unconditional, help: .serve("client-timeout")) var clientTimeout: String?
    @Option(parsing: .unconditional, help: .serve("max-connections")) var maxConnections: String?
    @Option(parsing: .unconditional, help: .serve("loops")) var loops: String?
    @Option(parsing: .unconditional, help: .serve("max-cache-size")) var maxCacheSize: String?
    @Option(help: .serve("ignore-query")) var ignoreQuery: [String] = []
    @Option(parsing: .unconditional, help: .serve("revalidate-after")) var revalidateAfter: String?
    @Option(parsing: .unconditional, help: .serve("cache-types")) var cacheTypes: String?
    @Option(parsing: .unconditional, help: .serve("cache-status-name")) var cacheStatusName: String?
    @Option(parsing: .unconditional, help: .serve("origin")) var origin: String?
    @Option(parsing: .unconditional, help: .serve("access-log")) var accessLog: String?
    @Option(parsing: .unconditional, help: .serve("ca-file")) var caFile: String?
    @Flag(help: .serve("insecure")) var insecure = false
    @Option(help: .serve("header")) var header: [String] = []
    @Option(help: .serve("forward-header")) var forwardHeader: [String] = []
    @Option(help: .serve("allow-origin")) var allowOrigin: [String] = []
    @Option(help: .serve("server-name")) var serverName: [String] = []
    @Option(parsing: .unconditional, help: .serve("max-connections-per-client")) var maxConnectionsPerClient: String?
    @Flag(help: .serve("allow-lan-reverse-proxy")) var allowLanReverseProxy = false
    @Option(parsing: .unconditional, help: .serve("upstream-proxy")) var upstreamProxy: String?
    @Option(help: .serve("no-upstream-proxy-for")) var noUpstreamProxyFor: [String] = []
    @Option(parsing: .unconditional, help: .serve("encryption-key-file")) var encryptionKeyFile: String?
    @Option(parsing: .unconditional, help: .serve("download-parallel")) var downloadParallel: String?
    @Option(parsing: .unconditional, help: .serve("download-rate")) var downloadRate: String?
    @Option(parsing: .unconditional, help: .serve("drain-timeout")) var drainTimeout: String?
    @Option(parsing: .unconditional, help: .serve("prefetch")) var prefetch: String?
    @Flag(help: .serve("strip-cmcd")) var stripCmcd = false
    @Flag(inversion: .prefixedNo, help: .serve("cmcd-hints")) var cmcdHints: Bool?

    /// The options given, by `ServeOption` name, by reflection (flag: "true"; `--no-…`: "false").
    private var given: [(String, [String])] {
        Mirror(reflecting: self).children.compactMap { child in
            guard let label = child.label, label.hasPrefix("_"), label != "_config" else { return nil }
            let name = Self.optionName(String(label.dropFirst()))
            precondition(ServeOption.named(name) != nil, "serve's property \(label) names no option of the table")
            switch child.value {
            case let option as Option<String?>: return (name, option.wrappedValue.map { [$0] } ?? [])
            case let option as Option<[String]>: return (name, option.wrappedValue)
            case let flag as Flag<Bool>: return (name, flag.wrappedValue ? ["true"] : [])
            case let flag as Flag<Bool?>: return (name, flag.wrappedValue.map { [$0 ? "true" : "false"] } ?? [])
            default: return nil
            }
        }
    }

    /// `cacheDir` → `cache-dir`: the option a property is named after.
    static func optionName(_ property: String) -> String {
        property.reduce(into: "") { name, character in
            if character.isUppercase { name += "-" + character.lowercased() } else { name.append(character) }
        }
    }

    static func baseSettings() -> ServeSettings {
        var settings = ServeSettings(cacheDirectory: defaultCacheDirectory())
        settings.configuration.loops = min(256, max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        settings.configuration.ownsProcess = true
        return settings
    }

    /// The defaults, then the configuration file's lines (`readingFile`), then every option given, each
    /// checked by `ServeOption`. A file's error is an `HTTPCacheError` naming its file and line.
    func settings(readingFile: Bool = true) throws -> ServeSettings {
        var settings = Self.baseSettings()
        if readingFile, let config {
            // Every wrong line at once, as check-config reports them.
            let (file, problems) = try ConfigFile.problems(path: config, applyingTo: settings)
            if !problems.isEmpty { throw HTTPCacheError(.invalidArgument, problems.joined(separator: "\n")) }
            try file.apply(to: &settings)
        }
        for (name, values) in given where !values.isEmpty {
            do {
                // A repeatable option given here replaces the file's list.
                if ServeOption.named(name)?.isRepeatable == true { try settings.set(name, "") }
                for value in values { try settings.set(name, value) }
            } catch where error.code == .key {
                throw error  // a key file refused: exit 22 with what is wrong with it
            } catch { throw ValidationError("--" + error.message) }
        }
        return settings
    }

    func validate() throws {
        // A refused key file is left to `run`, which exits with the key error's status (22).
        do { _ = try settings(readingFile: false) } catch let error as HTTPCacheError where error.code == .key {}
    }

    func run() throws {
        let settings = try settings()
        // The loop thread does nearly all allocation. Two malloc arenas instead of one per thread keep
        // about 1.5 MB of RSS off a serving proxy (a host embedding the library keeps its own).
        MallocArenas.limit(to: 2)
        let fileSink = try settings.logFile.map { path throws(HTTPCacheError) in try LogFileSink(path: path) }
        let level = LiveLogLevel(settings.logLevel)
        LoggingSystem.bootstrap { label in
            // Each handler lets everything through; the live level filters (a reload changes it).
            var console = StreamLogHandler.standardError(label: label)
            console.logLevel = .trace
            guard let fileSink else { return LiveLevelLogHandler(console, level: level) }
            var file = FileLogHandler(label: label, sink: fileSink)
            file.logLevel = .trace
            return LiveLevelLogHandler(MultiplexLogHandler([console, file]), level: level)
        }
        let cache = try MediaCache(configuration: settings.configuration)
        let signals = SignalQueue()
        try cache.watch(signals: ServeLifecycle.watched) { signals.post($0) }
        try cache.serve()
        print("listening on http://" + OriginURL.authority(host: settings.configuration.host, port: cache.port ?? 0))
        fflush(nil)  // all streams: the first line must reach a pipe at once
        var driver = ServeDriver(command: self, cache: cache, settings: settings, level: level, logFile: fileSink)
        driver.run(signals)
    }
}

extension ArgumentHelp {
    static func serve(_ name: String) -> ArgumentHelp {
        guard let option = ServeOption.named(name) else { fatalError("no serve option \(name)") }
        return ArgumentHelp(option.help, valueName: option.valueName.isEmpty ? nil : option.valueName.lowercased())
    }
}

struct URLCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "url", abstract: "Print the proxy URL for an origin URL.")

    @Argument(help: "The origin URL (http or https).") var original: String
    @Option(help: "Port of the proxy (default: the port of the proxy serving --cache-dir, or the default cache folder).")
    var port: Int?
    @Option(help: "Host of the proxy.") var host = "127.0.0.1"
    @Option(name: .customLong("cache-dir"),
            help: "The proxy's cache folder: signs the URL with its key (needed for a proxy in LAN mode; implied by a non-loopback --host).")
    var cacheDirectory: String?
    @Option(name: .customLong("encryption-key-file"),
            help: "The folder's key when it is encrypted at rest (its URL key is sealed with it).")
    var encryptionKeyFile: String?

    func run() throws {
        // A non-loopback proxy serves signed URLs only: sign with the default folder's key then.
        let lan = !MediaCache.isLoopback(host: host)
        let folder = cacheDirectory ?? (lan ? defaultCacheDirectory() : nil)
        let url: String
        do throws(HTTPCacheError) {
            let key = try encryptionKeyFile.map { path throws(HTTPCacheError) in try HTTPCacheConfiguration.encryptionKey(fromFile: path) }
            let proxyPort: Int
            if let port { proxyPort = port } else { proxyPort = try servingPort() }
            url = try MediaCache.proxyURL(for: original, host: host, port: proxyPort, signingFolder: folder, encryptionKey: key)
        } catch {
            // Others (an encrypted folder without its key: 22) keep their code, as serve's do.
            guard error.code == .invalidArgument else { throw error }
            throw ValidationError("\(error)")
        }
        print(url)
        // The path starts after "http://host:port".
        let authorityAndPath = url.dropFirst("http://".count)
        let path = authorityAndPath.firstIndex(of: "/").map { authorityAndPath[$0...].utf8.count } ?? 0
        if path > MediaCache.longestProxyPath {
            printError("warning: this URL's path is \(path) bytes; the proxy refuses paths over "
                       + "\(MediaCache.longestProxyPath) bytes (414 URI Too Long)\n")
        }
    }

    func validate() throws {
        if let port, !(1...65535).contains(port) { throw ValidationError("--port takes 1 to 65535; got \(port)") }
    }

    /// The port of the proxy serving the folder (lock file): a user who started `serve` need not repeat it.
    private func servingPort() throws(HTTPCacheError) -> Int {
        let folder = cacheDirectory ?? defaultCacheDirectory()
        guard let proxy = try MediaCache.servingProxy(of: folder),
              let port = proxy.address.split(separator: ":").last.flatMap({ Int($0) }) else {
            throw HTTPCacheError(.invalidArgument, "no proxy is serving the cache folder \(folder): give --port "
                                 + "(or --cache-dir of the folder a running proxy serves)")
        }
        return port
    }
}
