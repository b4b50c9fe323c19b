import CacheHTTP
import CacheStorage

/// Who may ask the proxy what: one decision per request, from the peer, the Host field and the
/// target, before any routing and before a request body is read. `decide` is pure (tested by table);
/// the `verdict` functions gather the facts for it.
///
/// - Loopback mode (bound to a loopback address, the default): a Host that is not a loopback name or
///   address gets 421 (a page rebinding its DNS name to 127.0.0.1 still has the browser send that name).
/// - LAN mode (any other bind): every proxy URL must carry a valid signature of its origin (403
///   otherwise), so LAN clients fetch only the URLs they were given; its Host is not checked. Admin
///   and statistics still need a loopback name or an address literal as Host.
/// - Reverse mode (`--origin`): the Host must be a loopback name, a `--server-name` or, in LAN mode,
///   an address literal, else 421, so a rebinding page cannot use the operator's origin credentials.
///   LAN mode serves it only when the operator opted in.
/// - Every mode: admin routes and statistics answer loopback peers only (403); a destination outside
///   the allowed origins gets 403.
package struct AccessPolicy: Sendable {
    package enum Mode: Sendable, Equatable { case loopback, lan }

    package enum Route: Sendable, Equatable {
        case admin, stats, proxy, other
        /// An absolute-form target (forward proxy, loopback peers only).
        case forward
        /// A path mapped onto `--origin`.
        case reverse
        /// A CONNECT tunnel (loopback peers only, never in LAN mode).
        case tunnel
    }

    package enum Signature: Sendable, Equatable { case valid, invalid, missing, unchecked }

    package enum HostKind: Sendable, Equatable {
        /// `localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`.
        case loopback
        /// One of the configured public names (`--server-name`).
        case serverName
        /// Another IP literal (only a client that knows the address sends one).
        case address
        case other
    }

    package struct Facts: Sendable, Equatable {
        package var route: Route
        package var peerIsLoopback: Bool
        /// What the Host field names; nil without a Host field.
        package var host: HostKind?
        package var signature: Signature = .unchecked
        /// Whether the destination is allowed; nil when not needed or not decodable.
        package var originAllowed: Bool?
        /// A tunnel's destination is this proxy's own listening address.
        package var backIntoProxy = false
    }

    package enum Verdict: Sendable, Equatable {
        case allow
        /// 421: the request names a host this proxy does not serve.
        case misdirected
        /// 403, with the reason for the body.
        case forbidden(String)

        package var status: Int {
            switch self {
            case .allow: return 200
            case .misdirected: return 421
            case .forbidden: return 403
            }
        }

        package var body: String {
            switch self {
            case .allow: return ""
            case .misdirected: return "Misdirected request: this proxy does not answer for that host name\n"
            case .forbidden(let why): return "Forbidden: \(why)\n"
            }
        }
    }

    package let mode: Mode
    /// Signs and checks proxy URLs (LAN mode; nil in loopback mode).
    package let signer: URLSigner?
    /// Where fetches may go (`--allow-origin`; a reload may change it).
    package var destinations: DestinationPolicy
    /// Public names the proxy answers reverse-proxy requests for (lowercase, no port).
    package let serverNames: Set<String>

    package init(mode: Mode, signer: URLSigner?, destinations: DestinationPolicy = .any, serverNames: [String] = []) {
        precondition(mode == .loopback || signer != nil, "LAN mode needs a signing key")
        self.mode = mode
        self.signer = signer
        self.destinations = destinations
        self.serverNames = Set(serverNames.map { Self.bareName(Substring($0.lowercased())) })
    }

    package static func mode(forBindHost host: String) -> Mode {
        LoopbackHost.contains(host) ? .loopback : .lan
    }

    package static func decide(_ facts: Facts, mode: Mode) -> Verdict {
        switch facts.route {
        case .forward, .tunnel:
            break  // absolute- or authority-form: a browser never sends it to a page's host, so Host names the origin
        case .reverse:
            switch facts.host {
            case .loopback?, .serverName?, nil: break
            case .address? where mode == .lan: break
            default: return .misdirected
            }
        case .admin, .stats:
            if facts.host == .other || facts.host == .serverName || (mode == .loopback && facts.host == .address) {
                return .misdirected
            }
        case .proxy, .other:
            if mode == .loopback, let host = facts.host, host != .loopback { return .misdirected }
        }
        switch facts.route {
        case .admin where !facts.peerIsLoopback:
            return .forbidden("cache administration is served to loopback clients only")
        case .stats where !facts.peerIsLoopback:
            return .forbidden("statistics are served to loopback clients only")
        case .tunnel where mode == .lan:
            return .forbidden("tunnels (CONNECT) are refused in LAN mode")
        case .tunnel where !facts.peerIsLoopback:
            return .forbidden("tunnels (CONNECT) are for loopback clients only")
        case .tunnel where facts.backIntoProxy:
            // Bytes after such a CONNECT would be requests to this proxy again: one socket could chain tunnels.
            return .forbidden("a tunnel (CONNECT) back into this proxy is refused")
        case .proxy:
            if mode == .lan && facts.signature != .valid {
                return .forbidden(facts.signature == .missing
                    ? "this proxy serves signed proxy URLs only (mint them with `httpcache url --cache-dir`)"
                    : "the proxy URL's signature does not match its origin URL")
            }
        default:
            break
        }
        if facts.originAllowed == false { return .forbidden("the origin is not among the allowed origins") }
        return .allow
    }

    /// PURGE follows the admin policy, Host check included (it is answered before the other routes):
    /// - absolute-form target (forward mode): Host names the origin, not checked;
    /// - a Host a rebinding page sends (another name; in loopback mode an address literal too): 421,
    ///   whatever the token;
    /// - a loopback Host (or none): a loopback peer, or the admin token;
    /// - a public name (`--server-name`) or, in LAN mode, an address literal: the admin token
    ///   (`X-HTTPCache-Token`, compared in constant time) even from a loopback peer (a TLS
    ///   terminator in front of a reverse proxy is one), else 421 for a public name, 403 otherwise.
    package static func purgeVerdict(host: HostKind?, absoluteForm: Bool, mode: Mode, peerIsLoopback: Bool,
                                     token: String?, adminToken: String) -> Verdict {
        let tokenValid = token.map { ConstantTime.equal(Array($0.utf8), Array(adminToken.utf8)) } ?? false
        let refused = Verdict.forbidden("PURGE is for loopback clients or the admin token")
        if absoluteForm { return peerIsLoopback || tokenValid ? .allow : refused }
        switch host {
        case .other?: return .misdirected
        case .address? where mode == .loopback: return .misdirected
        case .loopback?, nil: return peerIsLoopback || tokenValid ? .allow : refused
        case .serverName?: return tokenValid ? .allow : .misdirected
        case .address?: return tokenValid ? .allow : .forbidden("PURGE from a non-loopback name needs the admin token")
        }
    }

    package func hostKind(_ facts: HostFacts) -> HostKind? {
        guard let value = facts.value else { return nil }
        if facts.isLoopback { return .loopback }
        let name = Self.bareName(Substring(value.lowercased()))
        if serverNames.contains(name) { return .serverName }
        return Self.isAddressLiteral(name) ? .address : .other
    }

    /// For the proxy's own routes. Cheap (the Host facts are usually remembered); a signature costs an HMAC.
    package func verdict(for head: HTTPRequestHead, peerIsLoopback: Bool, host: HostFacts? = nil) -> Verdict {
        let target = head.target
        let route: Route = ProxyURL.isProxyTarget(target) ? .proxy
            : target.hasBytePrefix("/admin/") || target.hasBytePrefix("/ui/") || target == "/ui" ? .admin
            : StatsRoutes.isStats(target: target) ? .stats : .other
        let host = host ?? HostFacts(head)
        var facts = Facts(route: route, peerIsLoopback: peerIsLoopback, host: hostKind(host))
        if route == .proxy && (mode == .lan || !destinations.allowsAll) {
            let origin = ProxyURL.origin(fromTarget: target)
            if mode == .lan, let signer {
                if origin != nil, let signed = ProxyURL.signedSubject(fromTarget: target) {
                    facts.signature = signer.isValid(signature: signed.signature.utf8, forOrigin: signed.subject)
                        ? .valid : .invalid
                } else {
                    facts.signature = .missing
                }
            }
            if !destinations.allowsAll {
                facts.originAllowed = origin.flatMap(OriginURL.parse).map(destinations.allows)
            }
        }
        return Self.decide(facts, mode: mode)
    }

    package func verdict(transparent url: OriginURL, reverse: Bool, peerIsLoopback: Bool, host: HostFacts) -> Verdict {
        let facts = Facts(route: reverse ? .reverse : .forward, peerIsLoopback: peerIsLoopback,
                          host: reverse ? hostKind(host) : nil,
                          originAllowed: destinations.allowsAll ? nil : destinations.allows(url))
        return Self.decide(facts, mode: mode)
    }

    /// One to this machine on `ownPort` is refused, however spelt (the origin client checks addresses too).
    package func verdict(tunnelTo host: String, port: Int, peerIsLoopback: Bool, ownPort: Int? = nil) -> Verdict {
        let backIntoProxy = port == ownPort && LoopbackHost.isThisMachine(host)
        let facts = Facts(route: .tunnel, peerIsLoopback: peerIsLoopback, host: nil,
                          originAllowed: destinations.allowsAll ? nil : destinations.allows(host: host, port: port),
                          backIntoProxy: backIntoProxy)
        return Self.decide(facts, mode: mode)
    }

    /// The URI to write into a playlist fetched as `playlist` for `origin` in LAN mode: signed when
    /// the policy allows its destination, else nil (the URI stays as the origin wrote it: a playlist
    /// must not make the proxy sign any address). Without an allow-list only the playlist's own
    /// origin is signed.
    package func signedPath(forOrigin origin: String, inPlaylist playlist: OriginURL) -> String? {
        guard let signer, signs(origin, within: playlist) else { return nil }
        return ProxyURL.path(forOrigin: origin, signature: signer.signature(forOrigin: origin))
    }

    /// The base-form path (ProxyURL `/t/`) for `origin` in a manifest, signed as `signedPath` decides.
    package func signedBasePath(forOrigin origin: String, template: Bool, inManifest manifest: OriginURL) -> String? {
        guard let signer, signs(origin, within: manifest) else { return nil }
        return ProxyURL.basePath(forOrigin: origin, cutBefore: template ? UInt8(ascii: "$") : nil,
                                 sign: { signer.signature(forOrigin: $0) })
    }

    /// Signed: an allowed destination, or without an allow-list, one on the document's own origin.
    private func signs(_ origin: String, within document: OriginURL) -> Bool {
        guard let url = OriginURL.parse(origin) else { return false }
        return destinations.allowsAll ? url.authorityKey == document.authorityKey : destinations.allows(url)
    }

    /// "name" of "name", "name:port", "name." ("[v6]" stays bracketed).
    private static func bareName(_ value: Substring) -> String {
        var host = value
        if !host.hasPrefix("["), let colon = host.lastIndex(of: ":") { host = host[..<colon] }
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") { host = host[...close] }
        if host.hasSuffix(".") { host = host.dropLast() }
        return String(host)
    }

    private static func isAddressLiteral(_ host: String) -> Bool {
        if host.hasPrefix("[") { return host.hasSuffix("]") && host.count > 2 }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } && Int(part)! <= 255
        }
    }
}
