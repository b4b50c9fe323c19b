import CacheHTTP
import CacheLoading
import CacheProxy
import CacheStorage
import CacheUpstream
import Glibc
import Logging

/// The settings a proxy runs with, as `httpcache serve` and `hc_config_set` take them: the
/// configuration and what only a front end uses (logging, query parameters left out of the key).
public struct ServeSettings: Sendable {
    public var configuration: HTTPCacheConfiguration
    public var logLevel = Logger.Level.info
    /// A file that gets every log line as well (0600).
    public var logFile: String?
    /// Seconds a drain (SIGQUIT) lets responses in flight finish before the process exits anyway.
    public var drainTimeout = 30.0
    /// The texts each option was set from, by name, in order (empty when cleared): what a reload compares.
    public private(set) var given: [String: [String]] = [:]
    /// Query parameters left out of the cache key (`HTTPCacheConfiguration.ignoringQueryParameters`).
    public var ignoredQueryParameters: [String] = [] {
        didSet {
            let names = Set(ignoredQueryParameters)
            configuration.cacheKey = HTTPCacheConfiguration.ignoringQueryParameters(names)
        }
    }

    public init(cacheDirectory: String) {
        configuration = HTTPCacheConfiguration(cacheDirectory: cacheDirectory)
    }

    /// `configuration` as the option table reads it (no front-end option given).
    init(_ configuration: HTTPCacheConfiguration) { self.configuration = configuration }

    /// Sets option `name` from its text, checked as `ServeOption.all` says; nothing changes when it
    /// throws (`.invalidArgument`, saying what is valid). A repeatable option adds a value per call,
    /// an empty one clears them. A configuration file's `name = value` lines each come here.
    public mutating func set(_ name: String, _ text: String) throws(HTTPCacheError) {
        guard let option = ServeOption.named(name) else {
            throw HTTPCacheError(.invalidArgument, "unknown option \(name)")
        }
        // Named, so a message read far from the call (hc_config_errmsg, a log) says which option.
        if let error = option.refusal?(text) { throw HTTPCacheError(error.code, "\(name): \(error.message)") }
        var changed = self
        if let valid = option.parse(text, &changed) ?? option.check(changed) {
            throw HTTPCacheError(.invalidArgument, "\(name) takes \(valid); got \"\(text)\"")
        }
        changed.given[name] = option.isRepeatable ? (text.isEmpty ? [] : changed.given[name, default: []] + [text]) : [text]
        self = changed
    }

    /// The settings a reload (SIGHUP) runs with: `base` with `reloaded`'s values of the reloadable
    /// options and these settings' of the others; `needRestart` names others `reloaded` would change.
    public func reloading(_ reloaded: ServeSettings,
                          base: ServeSettings) throws(HTTPCacheError) -> (settings: ServeSettings, needRestart: [String]) {
        var merged = base
        for option in ServeOption.all {
            let source = option.isReloadable ? reloaded : self
            guard let texts = source.given[option.name] else { continue }
            if texts.isEmpty { try merged.set(option.name, "") }
            for text in texts { try merged.set(option.name, text) }
        }
        let needRestart = ServeOption.all.filter { !$0.isReloadable && given[$0.name] != reloaded.given[$0.name] }.map(\.name)
        return (merged, needRestart)
    }
}

/// One option of `httpcache serve`. `ServeOption.all` is the one table of CLI flags (`--name`),
/// `hc_config_set` names and their help, and the one place values are checked: text by `parse`,
/// values set from Swift by `check` (`HTTPCacheConfiguration.validate()`).
public struct ServeOption: Sendable {
    /// The long option name: `--name` on the command line, the C option.
    public let name: String
    /// What the value is, for help texts ("SECONDS"); empty for a flag.
    public let valueName: String
    public let help: String
    /// Given once per value; an empty value (C) clears the list.
    public let isRepeatable: Bool
    /// Can change while the proxy runs (a configuration reload) without a restart.
    public let isReloadable: Bool
    /// Reads the text into the settings; what the option takes when it cannot.
    let parse: @Sendable (String, inout ServeSettings) -> String?
    /// What the option takes when the value set is not one of those; nil when it is.
    let check: @Sendable (ServeSettings) -> String?
    /// Copies the value from the second settings into the first (a reload's reloadable options).
    let copy: @Sendable (inout ServeSettings, ServeSettings) -> Void
    /// Writes the value where the proxy or engine reads it (public to running configuration).
    var apply: @Sendable (ServeSettings, inout ProxyConfiguration) -> Void = { _, _ in }
    /// Its own error for a refused value (a key file's problem, `.key`), before `parse`; nil: `parse` says.
    var refusal: (@Sendable (String) -> HTTPCacheError?)? = nil

    public static func named(_ name: String) -> ServeOption? { all.first { $0.name == name } }

    /// Every option, in the order `httpcache serve --help` lists them.
    public static let all: [ServeOption] = [
        option("host", "ADDRESS", "Address to listen on, an IPv4 or IPv6 literal (default 127.0.0.1; another than loopback turns on LAN mode).",
               \.configuration.host, takes: "an IPv4 or IPv6 address", read: { $0 }, isValid: isAddressLiteral, into: { $1.host = $0 }),
        option("port", "PORT", "Port to listen on (0 picks a free one).", \.configuration.port, takes: "0 to 65535",
               read: { Int($0) }, isValid: { (0...65535).contains($0) }, into: { $1.port = $0 }),
        option("cache-dir", "PATH", "Cache folder (httpcache serve: $XDG_CACHE_HOME/httpcache or ~/.cache/httpcache).",
               \.configuration.cacheDirectory, takes: "a folder", read: { $0 }, isValid: { !$0.isEmpty }, into: { $1.engine.cacheDirectory = $0 }),
        option("log-level", "LEVEL", "trace, debug, info, notice, warning, error or critical (default info; the C library: warning).",
               \.logLevel, takes: "trace, debug, info, notice, warning, error or critical", reloadable: true,
               read: { Logger.Level(rawValue: $0.lowercased()) }),
        option("log-file", "PATH", "Also append log lines to this file.", \.logFile, takes: "a path", read: { $0 }, isValid: { $0 != "" }),
        seconds("connect-timeout", "Seconds to connect to an origin (TCP and TLS, default 10).", \.configuration.connectTimeout, \.engine.upstream.connectTimeout),
        seconds("read-timeout", "Seconds without data from an origin before 504 (default 30).", \.configuration.readTimeout, \.engine.upstream.readTimeout),
        seconds("idle-timeout", "Seconds an idle client connection is kept (default 60).", \.configuration.clientIdleTimeout, \.connection.keepAliveTimeout),
        seconds("head-timeout", "Seconds a client has to send a whole request head (default 10, at most the idle timeout).",
                \.configuration.clientHeadTimeout, \.connection.headTimeout),
        seconds("client-timeout", "Seconds a client may accept no byte of its response before it is closed (default 60).",
                \.configuration.clientSendTimeout, \.connection.sendTimeout),
        option("max-connections", "COUNT", "Most client connections (default: what the open-file limit leaves after origin connections and data files, about 3/4 of it).",
               \.configuration.maxClientConnections, takes: "a number of connections, 1 or more", read: { Int($0).map { Optional($0) } },
               isValid: { ($0 ?? 1) >= 1 }, into: { $1.maxClientConnections = $0 }),
        option("loops", "COUNT", "Event loops (threads) serving clients (httpcache serve: the number of CPU cores; the library: 1).",
               \.configuration.loops, takes: "1 to 256", read: { Int($0) }, isValid: { (1...256).contains($0) }, into: { $1.loops = $0 }),
        option("max-cache-size", "SIZE", "Cache size limit: bytes, K, M, G, T (x1000) or KiB, MiB, GiB, TiB (x1024); default 500MB.",
               \.configuration.maxCacheSize, takes: "a size such as 500MB or 2GiB", reloadable: true, read: ByteSize.parse,
               isValid: { $0 >= 0 }, into: { $1.engine.maxCacheBytes = $0 }),
        list("ignore-query", "NAME", "A query parameter left out of the cache key (repeatable).", \.ignoredQueryParameters,
             reloadable: false) { name in
            name.isEmpty || name.contains { "&=#".contains($0) } ? "a query parameter name" : nil
        },
        option("revalidate-after", "SECONDS",
               "Seconds a response without explicit freshness (Cache-Control, Expires) stays fresh; overrides the heuristic.",
               \.configuration.revalidateAfter, takes: "a number of seconds, 0 or more", read: { Double($0).map { Optional($0) } },
               isValid: { $0.map { $0.isFinite && $0 >= 0 } ?? true }, into: { seconds, proxy in
                   if let seconds { proxy.engine.policy.setHeuristicLifetime(seconds: Int(seconds)) }
               }),
        option("cache-types", "TYPES",
               "Content types kept, in every mode: media, all, or TYPE[,TYPE...] (a subtype of * takes a whole type); default media for proxy URLs, all (RFC 9111) for forward and reverse proxying.",
               \.configuration.cacheTypes, takes: "media, all or a list of media types such as text/html,image/*",
               read: { CacheTypes.parse($0) == nil ? nil : Optional($0) },
               isValid: { $0.map { CacheTypes.parse($0) != nil } ?? true }, into: { $1.engine.policy.cacheTypes = $0.flatMap(CacheTypes.parse) }),
        option("cache-status-name", "NAME", "The cache's name in the Cache-Status field of every response (default httpcache).",
               \.configuration.cacheStatusName, takes: "a token such as httpcache", read: { $0 },
               isValid: CacheStatusField.isValidName, into: { $1.cacheStatusName = $0 }),
        option("origin", "URL", "Reverse-proxy mode: map every request path and query onto this http(s) origin.",
               \.configuration.origin, takes: "an http or https origin without a path, e.g. https://media.example.com",
               read: { $0 }, isValid: { $0.map { OriginURL.parse($0)?.pathAndQuery == "/" } ?? true }, into: { origin, proxy in
                   guard let origin else { return }
                   proxy.reverseOrigin = OriginURL.parse(origin)
                   proxy.engine.policy.cache.honorsCDNCacheControl = true
               }),
        option("access-log", "PATH",
               "Append one line per response to this file (time, client, method, target, status, bytes, origin bytes, HIT/MISS/PARTIAL/BYPASS, Cache-Status word, ms).",
               \.configuration.accessLogPath, takes: "a path", reloadable: true, read: { $0 }, isValid: { $0 != "" }, into: { $1.accessLogPath = $0 }),
        option("ca-file", "PATH", "PEM file of extra CA certificates trusted for https origins.", \.configuration.caFile,
               takes: "a path", read: { $0 }, isValid: { $0 != "" }, into: { $1.engine.upstream.tls.caFile = $0 }),
        option("insecure", "", "Do not verify https origins' certificates (logs a warning at every start).",
               \.configuration.insecure, takes: "true or false", read: flag, into: { $1.engine.upstream.tls.verifyCertificates = !$0 }),
        ServeOption(name: "header", valueName: "'NAME: VALUE'", help: "A field added to every origin request (repeatable).",
                    isRepeatable: true, isReloadable: true, parse: { text, settings in
                        guard !text.isEmpty else { settings.configuration.extraHeaders = []; return nil }
                        guard let colon = text.firstIndex(of: ":") else { return "'Name: value'" }
                        let value = text[text.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
                        settings.configuration.extraHeaders.append((String(text[..<colon]), String(value)))
                        return nil
                    }, check: { settings in
                        settings.configuration.extraHeaders.lazy.compactMap { UpstreamHeaders.problem(name: $0.0, value: $0.1) }
                            .first.map { "'Name: value' of a field the proxy does not set itself (\($0))" }
                    }, copy: { $0.configuration.extraHeaders = $1.configuration.extraHeaders },
                    apply: { $1.engine.upstream.extraHeaders = $0.configuration.extraHeaders.map { (name: $0.0, value: $0.1) } }),
        list("forward-header", "NAME", "A client request field sent on to the origin (repeatable).", \.configuration.forwardedHeaders,
             reloadable: true, into: { $1.engine.upstream.forwardedHeaders = $0.map { $0.lowercased() } }) {
                 UpstreamHeaders.problem(name: $0, value: "").map { "a field name the proxy does not set itself (\($0))" }
             },
        list("allow-origin", "HOST[:PORT]",
             "An origin the proxy may fetch from, checked on every fetch and redirect hop; others get 403 (repeatable).",
             \.configuration.allowedOrigins, reloadable: true, into: {
                 // Checked by `validate()` first: were a bad entry to get here, the list would allow nothing rather than everything.
                 $1.engine.upstream.destinations = (try? DestinationPolicy.parse($0).get()) ?? .nothing
             }) {
                 HTTPCacheConfiguration.isAllowedOriginEntry($0) ? nil : "a host or HOST:PORT"
             },
        list("server-name", "NAME", "A public name reverse-proxy clients may send as Host; others than loopback names get 421 (repeatable).",
             \.configuration.serverNames, reloadable: false, into: { $1.serverNames = $0 }, hostName),
        option("max-connections-per-client", "COUNT",
               "Most connections one client address may hold (default: half of --max-connections).",
               \.configuration.maxConnectionsPerClient, takes: "a number of connections, 1 or more", read: { Int($0).map { Optional($0) } },
               isValid: { ($0 ?? 1) >= 1 }, into: { $1.maxConnectionsPerClient = $0 }),
        option("allow-lan-reverse-proxy", "",
               "Allow --origin with a LAN --host: every LAN client then reaches the origin with the configured headers.",
               \.configuration.allowsLANReverseProxy, takes: "true or false", read: flag, into: { $1.allowsLANReverseProxy = $0 }),
        option("upstream-proxy", "URL",
               "Send origin requests through this parent proxy (http://host:port): http in absolute form, https through CONNECT.",
               \.configuration.upstreamProxy, takes: "an http://host:port proxy URL", read: { $0 },
               isValid: { $0.map { ParentProxy.parse($0) != nil } ?? true }, into: {
                   $1.engine.upstream.parentProxy = $0.flatMap { ParentProxy.parse($0) }
               }),
        list("no-upstream-proxy-for", "HOST", "A host (and its subdomains) reached without --upstream-proxy (repeatable).",
             \.configuration.noUpstreamProxyFor, reloadable: false, into: { hosts, proxy in
                 // After upstream-proxy in this table: the parent it set learns its exceptions.
                 proxy.engine.upstream.parentProxy = proxy.engine.upstream.parentProxy.map {
                     ParentProxy(host: $0.host, port: $0.port, directHosts: hosts)
                 }
             }, hostName),
        // Operations like nginx (issue #25): what a drain (SIGQUIT) waits for.
        option("drain-timeout", "SECONDS", "Seconds SIGQUIT lets responses in flight finish before the proxy exits (default 30; httpcache serve only).",
               \.drainTimeout, takes: "a number of seconds, 0 or more", reloadable: true, read: { Double($0) },
               isValid: { $0.isFinite && $0 >= 0 }),
        keyFileOption,
        // Downloads (httpcache download, issue #23).
        option("download-parallel", "COUNT", "Resources fetched at once over all downloads and preloads (default 4).",
               \.configuration.downloadParallel, takes: "1 to 64", reloadable: true, read: { Int($0) }, isValid: { (1...64).contains($0) }, into: {
                   $1.engine.downloadParallel = $0
               }),
        option("download-rate", "BYTES_PER_S",
               "Bytes per second all downloads and preloads may take from origins together, as a size (0: no cap, the default); players are never capped.",
               \.configuration.downloadRate, takes: "a number of bytes per second, 0 or more", reloadable: true, read: ByteSize.parse, isValid: { $0 >= 0 }, into: {
                   $1.engine.downloadRate = $0
               }),
        // Players' telemetry (CTA-5004 CMCD, issue #38).
        option("strip-cmcd", "", "Drop players' CMCD (the CMCD query argument and CMCD-* fields) from origin requests; by default a miss forwards it.",
               \.configuration.stripsCMCD, takes: "true or false", reloadable: true, read: flag, into: { $1.engine.upstream.stripsCMCD = $0 }),
        option("cmcd-hints", "", "Fetch the next object a player names in its CMCD (nor, nrr) into the cache in the background (default true).",
               \.configuration.followsCMCDHints, takes: "true or false", reloadable: true, read: flag, into: { $1.engine.followsCMCDHints = $0 }),
        // Prefetch (issue #36).
        option("prefetch", "COUNT",
               "Media segments fetched ahead of what a player asks for, in the background (default 2; 0: off).",
               \.configuration.prefetch, takes: "0 to 16", reloadable: true, read: { Int($0) }, isValid: { (0...16).contains($0) }, into: { $1.engine.prefetch = $0 }),
    ]

    /// A flag's text: true/yes/on/1 or false/no/off/0.
    private static func flag(_ text: String) -> Bool? {
        ["true": true, "yes": true, "on": true, "1": true, "false": false, "no": false, "off": false, "0": false][text.lowercased()]
    }

    /// A list entry that must be a host name: what it takes when it is not one.
    private static func hostName(_ text: String) -> String? {
        text.isEmpty || text.contains { $0 == " " || $0 == "/" || $0 == "@" } ? "a host name" : nil
    }

    /// The key file: refused with what is wrong with it (`FolderKeys.readKeyFile`, coded `.key`).
    private static var keyFileOption: ServeOption {
        var key = option("encryption-key-file", "FILE",
                         "Encrypt the cache folder at rest with the key in FILE (32 bytes or 64 hex digits; keep it outside the folder).",
                         \.configuration.encryptionKey, takes: "a file holding a key of 32 bytes or 64 hex digits",
                         // An empty path is refused, not "no key": an unset variable must not give a
                         // plaintext folder (leave the option out instead).
                         read: { $0.isEmpty ? nil : (try? FolderKeys.readKeyFile($0)).map { Optional($0) } },
                         isValid: { $0 == nil || $0?.count == 32 }, into: { $1.engine.encryptionKey = $0 })
        key.refusal = { path in
            guard !path.isEmpty else { return nil }
            do throws(StorageError) { _ = try FolderKeys.readKeyFile(path) } catch { return HTTPCacheError(error) }
            return nil
        }
        return key
    }

    /// A single-valued option: `read` makes the text a value of `field` that must pass `isValid`.
    private static func option<Value>(_ name: String, _ valueName: String, _ help: String,
                                      _ field: WritableKeyPath<ServeSettings, Value> & Sendable, takes valid: String,
                                      reloadable: Bool = false, read: @escaping @Sendable (String) -> Value?,
                                      isValid: @escaping @Sendable (Value) -> Bool = { _ in true },
                                      into: @escaping @Sendable (Value, inout ProxyConfiguration) -> Void = { _, _ in }) -> ServeOption {
        ServeOption(name: name, valueName: valueName, help: help, isRepeatable: false, isReloadable: reloadable,
                    parse: { text, settings in
                        guard let value = read(text) else { return valid }
                        settings[keyPath: field] = value
                        return nil
                    }, check: { isValid($0[keyPath: field]) ? nil : valid }, copy: { $0[keyPath: field] = $1[keyPath: field] },
                    apply: { into($0[keyPath: field], &$1) })
    }

    /// Seconds, run as milliseconds (rounded up: a timeout never ends early).
    private static func seconds(_ name: String, _ help: String, _ field: WritableKeyPath<ServeSettings, Double> & Sendable,
                                _ milliseconds: WritableKeyPath<ProxyConfiguration, UInt64> & Sendable) -> ServeOption {
        option(name, "SECONDS", help, field, takes: "a number of seconds above 0", read: { Double($0) },
               isValid: { $0.isFinite && $0 > 0 }, into: { $1[keyPath: milliseconds] = UInt64(($0 * 1000).rounded(.up)) })
    }

    private static func list(_ name: String, _ valueName: String, _ help: String,
                             _ field: WritableKeyPath<ServeSettings, [String]> & Sendable, reloadable: Bool,
                             into: @escaping @Sendable ([String], inout ProxyConfiguration) -> Void = { _, _ in },
                             _ valid: @escaping @Sendable (String) -> String?) -> ServeOption {
        ServeOption(name: name, valueName: valueName, help: help, isRepeatable: true, isReloadable: reloadable,
                    parse: { text, settings in
                        if text.isEmpty { settings[keyPath: field] = [] } else { settings[keyPath: field].append(text) }
                        return nil
                    }, check: { $0[keyPath: field].lazy.compactMap(valid).first },
                    copy: { $0[keyPath: field] = $1[keyPath: field] }, apply: { into($0[keyPath: field], &$1) })
    }

    /// An IPv4 or IPv6 literal, as the server binds (no name lookup).
    static func isAddressLiteral(_ text: String) -> Bool {
        var storage = in6_addr()
        return inet_pton(AF_INET, text, &storage) == 1 || inet_pton(AF_INET6, text, &storage) == 1
    }
}

extension HTTPCacheConfiguration {
    /// Checks every value as `ServeOption.all` does (`MediaCache` calls it at open: a bad value fails).
    public func validate() throws(HTTPCacheError) {
        let settings = ServeSettings(self)
        for option in ServeOption.all {
            if let valid = option.check(settings) {
                throw HTTPCacheError(.invalidArgument, "\(option.name) takes \(valid)")
            }
        }
    }
}
