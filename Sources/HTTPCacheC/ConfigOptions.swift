import CacheUpstream
import Glibc
import HTTPCache

/// The options of one hc_config, each validated as it is set, so that a bad
/// value fails at hc_config_set (HC_EINVAL) rather than later at hc_open.
/// A value: hc_open copies it, and the hc_config may be freed at once.
struct CConfiguration: Sendable {
    /// Everything but the cache-key mapping, with the library's defaults.
    /// An empty `cacheDirectory` means "not set" (hc_open needs one).
    var settings = HTTPCacheConfiguration(cacheDirectory: "")
    /// `ignore-query` names, turned into `settings.cacheKey` by `configuration`.
    var ignoredQueryParameters: [String] = []
    var log = LogTarget()

    /// The Swift configuration to open the cache with; nil without "cache-dir".
    var configuration: HTTPCacheConfiguration? {
        guard !settings.cacheDirectory.isEmpty else { return nil }
        var result = settings
        if !ignoredQueryParameters.isEmpty {
            result.cacheKey = HTTPCacheConfiguration.ignoringQueryParameters(Set(ignoredQueryParameters))
        }
        return result
    }

    /// Applies one option; false (and no change) when the option is unknown
    /// or its value malformed.
    mutating func set(_ option: String, _ value: String) -> Bool {
        switch option {
        case "cache-dir":
            guard !value.isEmpty else { return false }
            settings.cacheDirectory = value
        case "host":
            guard Self.isAddressLiteral(value) else { return false }
            settings.host = value
        case "port":
            guard let port = Self.integer(value), (0...65535).contains(port) else { return false }
            settings.port = port
        case "loops":
            guard let loops = Self.integer(value), (1...256).contains(loops) else { return false }
            settings.loops = loops
        case "max-cache-size":
            guard let bytes = ByteSize.parse(value) else { return false }
            settings.maxCacheSize = bytes
        case "connect-timeout":
            guard let seconds = Self.seconds(value), seconds > 0 else { return false }
            settings.connectTimeout = seconds
        case "read-timeout":
            guard let seconds = Self.seconds(value), seconds > 0 else { return false }
            settings.readTimeout = seconds
        case "revalidate-after":
            guard let seconds = Self.seconds(value) else { return false }
            settings.revalidateAfter = seconds
        case "ca-file":
            guard !value.isEmpty else { return false }
            settings.caFile = value
        case "insecure":
            guard let flag = Self.boolean(value) else { return false }
            settings.insecure = flag
        case "header":
            guard !value.isEmpty else { settings.extraHeaders = []; return true }
            guard let field = Self.headerField(value) else { return false }
            settings.extraHeaders.append(field)
        case "forward-header":
            guard !value.isEmpty else { settings.forwardedHeaders = []; return true }
            guard UpstreamHeaders.problem(name: value, value: "") == nil else { return false }
            settings.forwardedHeaders.append(value)
        case "ignore-query":
            guard !value.isEmpty else { ignoredQueryParameters = []; return true }
            guard !value.contains(where: { $0 == "&" || $0 == "=" || $0 == "#" }) else { return false }
            ignoredQueryParameters.append(value)
        case "allow-origin":
            guard !value.isEmpty else { settings.allowedOrigins = []; return true }
            guard HTTPCacheConfiguration.isAllowedOriginEntry(value) else { return false }
            settings.allowedOrigins.append(value)
        case "server-name":
            guard !value.isEmpty else { settings.serverNames = []; return true }
            guard !value.contains(where: { $0 == " " || $0 == "/" || $0 == "@" }) else { return false }
            settings.serverNames.append(value)
        case "max-connections-per-client":
            guard let count = Self.integer(value), count >= 1 else { return false }
            settings.maxConnectionsPerClient = count
        case "log-level":
            guard let level = LogTarget.level(named: value) else { return false }
            log.minLevel = level
        default:
            return false
        }
        return true
    }

    /// Decimal digits only: no sign, no spaces, no "0x".
    static func integer(_ text: String) -> Int? {
        guard !text.isEmpty, text.count <= 9, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    /// A finite, non-negative number of seconds ("1.5", "30").
    static func seconds(_ text: String) -> Double? {
        guard let value = Double(text), value.isFinite, value >= 0 else { return nil }
        return value
    }

    static func boolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on", "1": true
        case "false", "no", "off", "0": false
        default: nil
        }
    }

    /// An IPv4 or IPv6 literal, as the server binds (no name lookup).
    static func isAddressLiteral(_ text: String) -> Bool {
        var storage = in6_addr()
        return inet_pton(AF_INET, text, &storage) == 1 || inet_pton(AF_INET6, text, &storage) == 1
    }

    /// "Name: value" as `--header` takes it; the name must be a token the
    /// proxy does not set itself (Host, Range, …).
    static func headerField(_ text: String) -> (String, String)? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let name = String(text[..<colon])
        let value = String(text[text.index(after: colon)...].drop { $0 == " " || $0 == "\t" })
        guard UpstreamHeaders.problem(name: name, value: value) == nil else { return nil }
        return (name, value)
    }
}
