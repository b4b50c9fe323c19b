import CacheHTTP
import CacheUpstream
import Glibc
import Logging

/// The settings a proxy runs with, as `httpcache serve` and `hc_config_set`
/// take them: the configuration and what only a front end uses (logging,
/// the ignored query parameters that make the cache key).
public struct ServeSettings: Sendable {
    public var configuration: HTTPCacheConfiguration
    public var logLevel = Logger.Level.info
    /// A file that gets every log line as well (0600).
    public var logFile: String?
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

    /// Sets option `name` from its text, checked as `ServeOption.all` says;
    /// nothing changes when it throws (`.invalidArgument`, saying what is valid).
    /// For a repeatable option each call adds a value and an empty one clears them.
    public mutating func set(_ name: String, _ text: String) throws(HTTPCacheError) {
        guard let option = ServeOption.named(name) else {
            throw HTTPCacheError(.invalidArgument, "unknown option \(name)")
        }
        var changed = self
        if let valid = option.parse(text, &changed) ?? option.check(changed) {
            throw HTTPCacheError(.invalidArgument, "\(name) takes \(valid); got \"\(text)\"")
        }
        self = changed
    }
}

/// One option of `httpcache serve`. `ServeOption.all` is the one table the
/// CLI flags (`--name`), the C library's `hc_config_set` names and their
/// help come from, and the one place values are checked: text by `parse`,
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

    public static func named(_ name: String) -> ServeOption? { all.first { $0.name == name } }

    /// Every option, in the order `httpcache serve --help` lists them.
    public static let all: [ServeOption] = [
        text("host", "ADDRESS", "Address to listen on, an IPv4 or IPv6 literal (default 127.0.0.1; another than loopback turns on LAN mode).",
             \.configuration.host) { isAddressLiteral($0) ? nil : "an IPv4 or IPv6 address" },
        number("port", "PORT", "Port to listen on (0 picks a free one).", \.configuration.port, 0...65535),
        text("cache-dir", "PATH", "Cache folder (httpcache serve: $XDG_CACHE_HOME/httpcache or ~/.cache/httpcache).",
             \.configuration.cacheDirectory) { $0.isEmpty ? "a folder" : nil },
        ServeOption(name: "log-level", valueName: "LEVEL", help: "trace, debug, info, notice, warning, error or critical (default info; the C library: warning).",
                    isRepeatable: false, isReloadable: true, parse: { text, settings in
                        guard let level = Logger.Level(rawValue: text.lowercased()) else { return levels }
                        settings.logLevel = level
                        return nil
                    }, check: { _ in nil }),
        optionalText("log-file", "PATH", "Also append log lines to this file.", \.logFile),
        seconds("connect-timeout", "Seconds to connect to an origin (TCP and TLS, default 10).", \.configuration.connectTimeout),
        seconds("read-timeout", "Seconds without data from an origin before 504 (default 30).", \.configuration.readTimeout),
        seconds("idle-timeout", "Seconds an idle client connection is kept (default 60).", \.configuration.clientIdleTimeout),
        seconds("head-timeout", "Seconds a client has to send a whole request head (default 10, at most the idle timeout).",
                \.configuration.clientHeadTimeout),
        seconds("client-timeout", "Seconds a client may accept no byte of its response before it is closed (default 60).",
                \.configuration.clientSendTimeout),
        ServeOption(name: "max-connections", valueName: "COUNT",
                    help: "Most client connections (default: 80% of the open-file limit).", isRepeatable: false,
                    isReloadable: false, parse: { text, settings in
                        guard let count = Int(text) else { return "a number of connections, 1 or more" }
                        settings.configuration.maxClientConnections = count
                        return nil
                    }, check: { ($0.configuration.maxClientConnections ?? 1) >= 1 ? nil : "a number of connections, 1 or more" }),
        number("loops", "COUNT", "Event loops (threads) serving clients (httpcache serve: the number of CPU cores; the library: 1).",
               \.configuration.loops, 1...256),
        ServeOption(name: "max-cache-size", valueName: "SIZE",
                    help: "Cache size limit: bytes, K, M, G, T (x1000) or KiB, MiB, GiB, TiB (x1024); default 500MB.",
                    isRepeatable: false, isReloadable: true, parse: { text, settings in
                        guard let bytes = ByteSize.parse(text) else { return "a size such as 500MB or 2GiB" }
                        settings.configuration.maxCacheSize = bytes
                        return nil
                    }, check: { $0.configuration.maxCacheSize >= 0 ? nil : "a size such as 500MB or 2GiB" }),
        list("ignore-query", "NAME", "A query parameter left out of the cache key (repeatable).", \.ignoredQueryParameters,
             reloadable: false) { name in
            name.isEmpty || name.contains { "&=#".contains($0) } ? "a query parameter name" : nil
        },
        ServeOption(name: "revalidate-after", valueName: "SECONDS",
                    help: "Seconds a response without explicit freshness (Cache-Control, Expires) stays fresh; overrides the heuristic.",
                    isRepeatable: false, isReloadable: false, parse: { text, settings in
                        settings.configuration.revalidateAfter = Double(text)
                        return settings.configuration.revalidateAfter == nil ? "a number of seconds, 0 or more" : nil
                    }, check: { ($0.configuration.revalidateAfter.map { $0.isFinite && $0 >= 0 } ?? true) ? nil : "a number of seconds, 0 or more" }),
        optionalText("origin", "URL", "Reverse-proxy mode: map every request path and query onto this http(s) origin.",
                     \.configuration.origin) { text in
            OriginURL.parse(text)?.pathAndQuery == "/" ? nil : "an http or https origin without a path, e.g. https://media.example.com"
        },
        optionalText("access-log", "PATH",
                     "Append one line per response to this file (time, client, method, target, status, bytes, origin bytes, HIT/MISS/PARTIAL/BYPASS, ms).",
                     \.configuration.accessLogPath, reloadable: true),
        optionalText("ca-file", "PATH", "PEM file of extra CA certificates trusted for https origins.", \.configuration.caFile),
        ServeOption(name: "insecure", valueName: "", help: "Do not verify https origins' certificates (logs a warning at every start).",
                    isRepeatable: false, isReloadable: false, parse: { text, settings in
                        switch text.lowercased() {
                        case "true", "yes", "on", "1": settings.configuration.insecure = true
                        case "false", "no", "off", "0": settings.configuration.insecure = false
                        default: return "true or false"
                        }
                        return nil
                    }, check: { _ in nil }),
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
                    }),
        list("forward-header", "NAME", "A client request field sent on to the origin (repeatable).", \.configuration.forwardedHeaders,
             reloadable: true) { UpstreamHeaders.problem(name: $0, value: "").map { "a field name the proxy does not set itself (\($0))" } },
        list("allow-origin", "HOST", "An origin host the proxy may fetch from; others get 403 (repeatable).",
             \.configuration.allowedOrigins, reloadable: true) { $0.isEmpty || $0.contains(" ") ? "a host name or address" : nil },
    ]

    private static let levels = "trace, debug, info, notice, warning, error or critical"

    private static func text(_ name: String, _ valueName: String, _ help: String,
                             _ field: WritableKeyPath<ServeSettings, String> & Sendable,
                             _ valid: @escaping @Sendable (String) -> String?) -> ServeOption {
        ServeOption(name: name, valueName: valueName, help: help, isRepeatable: false, isReloadable: false,
                    parse: { text, settings in settings[keyPath: field] = text; return nil },
                    check: { valid($0[keyPath: field]) })
    }

    private static func optionalText(_ name: String, _ valueName: String, _ help: String,
                                     _ field: WritableKeyPath<ServeSettings, String?> & Sendable, reloadable: Bool = false,
                                     _ valid: @escaping @Sendable (String) -> String? = { $0.isEmpty ? "a path" : nil }) -> ServeOption {
        ServeOption(name: name, valueName: valueName, help: help, isRepeatable: false, isReloadable: reloadable,
                    parse: { text, settings in settings[keyPath: field] = text; return nil },
                    check: { $0[keyPath: field].flatMap(valid) })
    }

    private static func number(_ name: String, _ valueName: String, _ help: String,
                               _ field: WritableKeyPath<ServeSettings, Int> & Sendable, _ range: ClosedRange<Int>) -> ServeOption {
        let valid = "\(range.lowerBound) to \(range.upperBound)"
        return ServeOption(name: name, valueName: valueName, help: help, isRepeatable: false, isReloadable: false,
                           parse: { text, settings in
                               guard let value = Int(text) else { return valid }
                               settings[keyPath: field] = value
                               return nil
                           }, check: { range.contains($0[keyPath: field]) ? nil : valid })
    }

    private static func seconds(_ name: String, _ help: String,
                                _ field: WritableKeyPath<ServeSettings, Double> & Sendable) -> ServeOption {
        let valid = "a number of seconds above 0"
        return ServeOption(name: name, valueName: "SECONDS", help: help, isRepeatable: false, isReloadable: false,
                           parse: { text, settings in
                               guard let value = Double(text) else { return valid }
                               settings[keyPath: field] = value
                               return nil
                           }, check: { $0[keyPath: field].isFinite && $0[keyPath: field] > 0 ? nil : valid })
    }

    private static func list(_ name: String, _ valueName: String, _ help: String,
                             _ field: WritableKeyPath<ServeSettings, [String]> & Sendable, reloadable: Bool,
                             _ valid: @escaping @Sendable (String) -> String?) -> ServeOption {
        ServeOption(name: name, valueName: valueName, help: help, isRepeatable: true, isReloadable: reloadable,
                    parse: { text, settings in
                        if text.isEmpty { settings[keyPath: field] = [] } else { settings[keyPath: field].append(text) }
                        return nil
                    }, check: { $0[keyPath: field].lazy.compactMap(valid).first })
    }

    /// An IPv4 or IPv6 literal, as the server binds (no name lookup).
    static func isAddressLiteral(_ text: String) -> Bool {
        var storage = in6_addr()
        return inet_pton(AF_INET, text, &storage) == 1 || inet_pton(AF_INET6, text, &storage) == 1
    }
}

extension HTTPCacheConfiguration {
    /// Checks every value as `ServeOption.all` does; `MediaCache` calls it
    /// when it opens, so a bad value fails there rather than being dropped.
    public func validate() throws(HTTPCacheError) {
        var settings = ServeSettings(cacheDirectory: cacheDirectory)
        settings.configuration = self
        for option in ServeOption.all {
            if let valid = option.check(settings) {
                throw HTTPCacheError(.invalidArgument, "\(option.name) takes \(valid)")
            }
        }
    }
}
