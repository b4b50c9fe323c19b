import CacheHTTP

/// Where a request goes, from its head alone before any routing by path: the intermediary checks of
/// RFC 9110 §7.6 and RFC 9112 §3.2 first, then the proxy mode the target selects. Pure.
enum RequestRoute: Equatable {
    /// A forward-proxy request (absolute-form, RFC 9112 §3.2.2) or, with an origin configured, any
    /// path mapped onto it (reverse proxy): served as a transparent HTTP/1.1 intermediary.
    case transparent(OriginURL)
    case local
    /// `CONNECT host:port` (authority-form, RFC 9110 §9.3.6): a byte tunnel, never cached.
    case tunnel(host: String, port: Int)
    case refuse(status: Int, reason: String)

    /// - Parameters:
    ///   - reverseOrigin: with `--origin`, every origin-form target but `OwnRoutes`' maps onto it.
    ///   - ownRoute: the target had `OwnRoutes`' reserved prefix: local in every mode.
    ///   - originURL: a memo of `originURL(target:reverseOrigin:)`.
    static func resolve(_ head: HTTPRequestHead, pseudonym: String, reverseOrigin: OriginURL?,
                        peerIsLoopback: Bool, host: HostFacts? = nil, ownRoute: Bool = false,
                        originURL: (String) -> OriginURL? = { _ in nil }) -> RequestRoute {
        if let error = (host ?? HostFacts(head)).error {
            return .refuse(status: 400, reason: "Bad request: \(error.rawValue)")
        }
        if Intermediary.isLoop(head.headers, pseudonym: pseudonym) {
            // The request came back through this proxy: forwarding it again would loop.
            return .refuse(status: 508, reason: "Loop detected: the request already passed through this proxy")
        }
        let target = head.target
        if head.method == "CONNECT" {
            guard let (host, port) = Self.authority(target) else {
                return .refuse(status: 400, reason: "Bad request: CONNECT needs host:port as its target")
            }
            guard peerIsLoopback else {
                return .refuse(status: 403, reason: "Forbidden: tunnels (CONNECT) are for loopback clients only")
            }
            // RFC 9110 §9.3.6: a CONNECT has no content; bytes after its head belong to the tunnel.
            if head.announcesBody {
                return .refuse(status: 400, reason: "Bad request: CONNECT takes no content")
            }
            return .tunnel(host: host, port: port)
        }
        if ownRoute { return .local }
        if !target.hasBytePrefix("/") {
            guard let url = originURL(target) ?? Self.originURL(target: target, reverseOrigin: nil) else {
                return .refuse(status: 400, reason: "Bad request: the target is not an http or https URL")
            }
            guard peerIsLoopback else {
                return .refuse(status: 403, reason: "Forbidden: forward-proxy use is for loopback clients only")
            }
            return .transparent(url)
        }
        if reverseOrigin != nil {
            guard let url = originURL(target) ?? Self.originURL(target: target, reverseOrigin: reverseOrigin) else {
                return .refuse(status: 400, reason: "Bad request: invalid request target")
            }
            return .transparent(url)
        }
        return .local
    }

    /// The origin URL an absolute-form target names, or an origin-form one maps to on `reverseOrigin`.
    static func originURL(target: String, reverseOrigin: OriginURL?) -> OriginURL? {
        guard target.hasBytePrefix("/") else { return OriginURL.parse(target) }
        guard let origin = reverseOrigin else { return nil }
        return OriginURL.parse(origin.scheme + "://" + origin.hostHeader + target)
    }

    /// (host, port) of "host:port" or "[v6]:port"; nil without a port or with what an authority cannot hold.
    static func authority(_ target: String) -> (String, Int)? {
        guard !target.contains("/"), let colon = target.lastIndex(of: ":"),
              let port = Int(target[target.index(after: colon)...]), (1...65535).contains(port),
              let url = OriginURL.parse("https://" + target), url.pathAndQuery == "/", url.port == port
        else { return nil }
        return (url.host, port)
    }
}
