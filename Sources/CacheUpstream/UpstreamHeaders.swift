import CacheHTTP

/// Which fields go to the origin: the proxy's framing fields, configured extras, a few of the client's.
package enum UpstreamHeaders {
    /// Client fields forwarded unless configured otherwise (lowercased).
    package static let defaultForwarded: Set<String> = ["user-agent", "accept", "accept-language"]

    /// Fields only the proxy sets: framing, hop-by-hop, its byte range and conditions on it.
    package static let reserved: Set<String> = [
        "host", "range", "if-range", "connection", "keep-alive", "proxy-connection", "te", "trailer",
        "transfer-encoding", "upgrade", "content-length", "accept-encoding", "expect",
    ]

    /// Fields not sent when a redirect leaves the origin first asked.
    package static let credentials: Set<String> = ["authorization", "cookie", "proxy-authorization"]

    /// The client's fields to send on: `defaultForwarded`, CMCD telemetry (meant for the
    /// delivery side) and `extra` (lowercased), never a reserved or Connection-named one.
    package static func forwarded(from client: HTTPHeaders, extra: [String]) -> HTTPHeaders {
        var out = HTTPHeaders()
        for field in client {
            let name = field.name.lowercased()
            guard !reserved.contains(name), !client.hasToken(name, in: "Connection"),
                  defaultForwarded.contains(name) || extra.contains(name) || CMCD.fieldNames.contains(name) else { continue }
            out.add(field.name, field.value)
        }
        return out
    }

    /// Besides hop-by-hop ones (RFC 9110 §7.6.1), fields a transparent proxy does not pass
    /// on: Host (set per hop), the range and preconditions (the cache's own for gaps).
    package static let transparentlyDropped: Set<String> = [
        "host", "range", "if-range", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since",
        "content-length", "expect",
    ]

    /// Fields that make origins build URLs or choose content outside the cache key: one
    /// client's `X-Forwarded-Host: evil.example` would land in a playlist served to all.
    /// Not sent when the response may be stored (pass-through requests keep them).
    package static let unkeyed: Set<String> = [
        "x-forwarded-host", "x-forwarded-proto", "x-forwarded-scheme", "x-forwarded-server", "x-forwarded-port",
        "x-forwarded-prefix", "x-original-url", "x-original-host", "x-rewrite-url", "x-host", "forwarded",
    ]

    /// Every end-to-end field of a client request, for forward and reverse
    /// proxy modes (RFC 9110 §7.6), except `transparentlyDropped` and `unkeyed`.
    package static func transparent(from client: HTTPHeaders) -> HTTPHeaders {
        var out = Intermediary.removingHopByHop(client)
        // One pass, each field compared only with names of its length (every request).
        out.removeAll { field in
            let length = field.name.utf8.count
            return length < droppedByLength.count && droppedByLength[length].contains { HTTPHeaders.sameName($0, field.name) }
        }
        return out
    }

    /// `transparentlyDropped` and `unkeyed`, by the length of the name.
    private static let droppedByLength: [[String]] = {
        let names = transparentlyDropped.union(unkeyed)
        var byLength = [[String]](repeating: [], count: (names.map(\.utf8.count).max() ?? 0) + 1)
        for name in names { byLength[name.utf8.count].append(name) }
        return byLength
    }()

    /// Fields a transparent request may carry and still get a proxy URL's response: forwarded by both,
    /// handled by the cache itself (directives, codings, Via), or never forwarded.
    private static let sharedWithProxyURLs: Set<String> = defaultForwarded.union(transparentlyDropped).union(unkeyed)
        .union(["accept-encoding", "cache-control", "pragma", "via", "connection", "keep-alive", "te",
                "proxy-connection", "proxy-authorization", "upgrade", "trailer", "transfer-encoding"])
        // CMCD (CTA-5004) changes with every request and chooses no content.
        .union(CMCD.fieldNames)

    /// Whether a transparent request sends a field a proxy URL's would not (`forwarded`: the configured extra
    /// names, lowercased), so the origin may answer differently. One per client connection, whose requests
    /// usually name the same fields in order: the last answer is kept for those names.
    package struct ProxyURLFieldsMemo {
        private var names: [String] = []
        private var forwarded: [String] = []
        private var differs = false

        package init() {}

        package mutating func differs(_ client: HTTPHeaders, forwarded: [String]) -> Bool {
            if client.count == names.count, forwarded == self.forwarded,
               zip(client, names).allSatisfy({ $0.name == $1 }) {
                return differs
            }
            names = client.map(\.name)
            self.forwarded = forwarded
            differs = client.contains { field in
                let name = field.name.lowercased()
                return !sharedWithProxyURLs.contains(name) && !forwarded.contains(name)
            }
            return differs
        }
    }

    /// Why a configured field cannot be used, or nil when it can.
    package static func problem(name: String, value: String) -> String? {
        // RFC 9110 §5.6.2 token characters.
        let symbols = Set("!#$%&'*+-.^_`|~".utf8)
        let isToken = name.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c | 0x20 >= 0x61 && c | 0x20 <= 0x7A) || symbols.contains(c)
        }
        guard !name.isEmpty, isToken else { return "\"\(name)\" is not a valid header name" }
        if reserved.contains(name.lowercased()) { return "\(name) is set by the proxy itself" }
        if value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) {
            return "the value of \(name) contains a line break"
        }
        return nil
    }

    /// One hop's request head. `extra` beats same-named fields; credentials stay with the first origin.
    package static func request(method: String, url: OriginURL, originalURL: OriginURL, headers: HTTPHeaders,
                        configuration: UpstreamConfiguration, body: [UInt8]? = nil) -> [UInt8] {
        // Through a parent proxy an http request names its whole URL (RFC 9112 §3.2.2).
        let absoluteForm = url.scheme == "http" && configuration.parent(for: url.host) != nil
        let sameOrigin = url.scheme == originalURL.scheme && url.host == originalURL.host && url.port == originalURL.port
        func allowed(_ name: String) -> Bool {
            sameOrigin || !credentials.contains { HTTPHeaders.sameName($0, name) }
        }
        // Written straight into bytes: this runs for every origin request.
        var head = HeadBuilder(fieldsCapacity: 512)
        let target = absoluteForm ? url.string : url.pathAndQuery
        // `--strip-cmcd`: the player's telemetry stays here (query argument and fields).
        let strip = configuration.stripsCMCD
        let path = strip ? QueryFilter.removing(QueryFilter.playerTelemetry, from: target) : target
        head.append(lines: Array("\(method) \(path) HTTP/1.1\r\n".utf8))
        head.add("Host", url.hostHeader)
        var hasUserAgent = false
        for (name, value) in configuration.extraHeaders where allowed(name) {
            head.add(name: name, value)
            if HTTPHeaders.sameName(name, "User-Agent") { hasUserAgent = true }
        }
        for (name, value) in headers where allowed(name) {
            if strip && CMCD.isFieldName(name) { continue }
            guard !configuration.extraHeaders.contains(where: { HTTPHeaders.sameName($0.name, name) }) else { continue }
            head.add(name: name, value)
            if HTTPHeaders.sameName(name, "User-Agent") { hasUserAgent = true }
        }
        if !hasUserAgent { head.add("User-Agent", configuration.userAgent) }
        // Offsets must mean what they mean in the stored file: a coding is asked for only
        // with a transparent client's Accept-Encoding (stored with it, ranges encoded).
        if !headers.contains("Accept-Encoding") { head.add("Accept-Encoding", "identity") }
        // A body goes with its length, as does an empty one of a method that usually has one.
        if let body, !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) {
            head.add("Content-Length", decimal: Int64(body.count))
        }
        head.add("Connection", "keep-alive")
        var out = head.finish()
        if let body { out.append(contentsOf: body) }
        return out
    }
}
