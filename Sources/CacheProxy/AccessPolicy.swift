import CacheHTTP
import CacheStorage

/// Who may ask the proxy what: one decision per request, from the peer, the
/// Host field and the target, before any routing.
///
/// - Loopback mode (bound to a loopback address, the default): a Host that
///   is not a loopback name or address gets 421. A web page can make a
///   browser reach 127.0.0.1 by rebinding its own DNS name, but the browser
///   still sends that name as Host.
/// - LAN mode (any other bind): every proxy URL must carry a valid signature
///   of its origin (403 otherwise), so LAN clients fetch only the URLs they
///   were given; the Host field is not checked (LAN clients use the LAN address).
/// - Both: admin routes and statistics answer loopback peers only (403);
///   with an origin allow-list, other destinations get 403.
///
/// `decide` is pure (tested by table); `verdict(for:peerIsLoopback:)` gathers
/// the facts for it.
package struct AccessPolicy: Sendable {
    package enum Mode: Sendable, Equatable { case loopback, lan }

    /// The routes the policy tells apart.
    package enum Route: Sendable, Equatable {
        case admin, stats, proxy, other
    }

    /// A proxy URL's signature, as far as the policy needs it.
    package enum Signature: Sendable, Equatable { case valid, invalid, missing, unchecked }

    package struct Facts: Sendable, Equatable {
        package var route: Route
        package var peerIsLoopback: Bool
        /// Whether the Host field names a loopback host; nil without a Host field.
        package var hostIsLoopback: Bool?
        package var signature: Signature = .unchecked
        /// The origin's host (lowercase), for the allow-list; nil when not needed or not decodable.
        package var originHost: String?
        package init(route: Route, peerIsLoopback: Bool, hostIsLoopback: Bool?, signature: Signature = .unchecked,
                     originHost: String? = nil) {
            self.route = route
            self.peerIsLoopback = peerIsLoopback
            self.hostIsLoopback = hostIsLoopback
            self.signature = signature
            self.originHost = originHost
        }

        /// The facts for a Host field value (nil: none).
        package init(route: Route, peerIsLoopback: Bool, host: String?, signature: Signature = .unchecked,
                     originHost: String? = nil) {
            self.init(route: route, peerIsLoopback: peerIsLoopback, hostIsLoopback: host.map(LoopbackHost.contains),
                      signature: signature, originHost: originHost)
        }
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
            case .misdirected: return "Misdirected request: this proxy answers requests for localhost only\n"
            case .forbidden(let why): return "Forbidden: \(why)\n"
            }
        }
    }

    package let mode: Mode
    /// Signs and checks proxy URLs (LAN mode; nil in loopback mode).
    package let signer: URLSigner?
    /// Origin hosts allowed (lowercase); empty allows all.
    package let allowedOrigins: Set<String>

    package init(mode: Mode, signer: URLSigner?, allowedOrigins: Set<String> = []) {
        precondition(mode == .loopback || signer != nil, "LAN mode needs a signing key")
        self.mode = mode
        self.signer = signer
        self.allowedOrigins = Set(allowedOrigins.map { $0.lowercased() })
    }

    /// The mode a bind address implies.
    package static func mode(forBindHost host: String) -> Mode {
        LoopbackHost.contains(host) ? .loopback : .lan
    }

    package static func decide(_ facts: Facts, mode: Mode, allowedOrigins: Set<String>) -> Verdict {
        if mode == .loopback, facts.hostIsLoopback == false {
            return .misdirected
        }
        switch facts.route {
        case .admin where !facts.peerIsLoopback:
            return .forbidden("cache administration is served to loopback clients only")
        case .stats where !facts.peerIsLoopback:
            return .forbidden("statistics are served to loopback clients only")
        case .proxy:
            if mode == .lan && facts.signature != .valid {
                return .forbidden(facts.signature == .missing
                    ? "this proxy serves signed proxy URLs only (mint them with `httpcache url --cache-dir`)"
                    : "the proxy URL's signature does not match its origin URL")
            }
            if !allowedOrigins.isEmpty && !(facts.originHost.map(allowedOrigins.contains) ?? false) {
                return .forbidden("the origin is not among the allowed origins")
            }
            return .allow
        default:
            return .allow
        }
    }

    /// The verdict for a request. Cheap in the default set-up (the Host
    /// facts are usually remembered by the connection); a signature costs one HMAC.
    package func verdict(for head: HTTPRequestHead, peerIsLoopback: Bool, host: HostFacts? = nil) -> Verdict {
        let target = head.target
        let route: Route
        if target.hasPrefix("/p/") {
            route = .proxy
        } else if target.hasPrefix("/admin/") {
            route = .admin
        } else if target == "/stats" || target.hasPrefix("/stats?") || target == "/metrics" || target.hasPrefix("/metrics?") {
            route = .stats
        } else {
            route = .other
        }
        let host = host ?? HostFacts(head)
        var facts = Facts(route: route, peerIsLoopback: peerIsLoopback,
                          hostIsLoopback: host.value == nil ? nil : host.isLoopback)
        if route == .proxy && (mode == .lan || !allowedOrigins.isEmpty) {
            let origin = ProxyURL.origin(fromTarget: target)
            if mode == .lan, let signer {
                if let origin, let signature = ProxyURL.signature(fromTarget: target) {
                    facts.signature = signer.isValid(signature: signature.utf8, forOrigin: origin) ? .valid : .invalid
                } else {
                    facts.signature = .missing
                }
            }
            facts.originHost = origin.flatMap(OriginURL.parse).map { $0.host.lowercased() }
        }
        return Self.decide(facts, mode: mode, allowedOrigins: allowedOrigins)
    }
}
