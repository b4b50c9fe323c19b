import CacheHTTP

// Players' CMCD (CTA-5004): counted with the response, hint fetched; never in the key, never an error.

extension ClientConnection {
    /// `proxyTarget`: a proxy URL's target; `apart` (forward and reverse proxying): whether the request
    /// has an entry of its own. A request without CMCD costs one scan of its target and field names.
    func readCMCD(_ head: HTTPRequestHead, origin: OriginURL, proxyTarget: String? = nil, apart: Bool? = nil) {
        guard CMCD.mayBePresent(target: head.target, headers: head.headers),
              let cmcd = CMCD.parse(target: head.target, headers: head.headers) else { return }
        record?.cmcd = cmcd
        // Handed over: the hint was taken on the other loop. LAN proxy-URL clients' hints are not followed.
        guard !resumingHandOver, head.method == "GET", server.engine.configuration.followsCMCDHints,
              proxyTarget == nil || server.access.mode != .lan || (peer?.isLoopback ?? false),
              let hint = CMCDHint(cmcd, origin: origin, proxyTarget: proxyTarget) else { return }
        let preloader = server.engine.preloader
        // A transparent client's hint is fetched as its next request will be: its fields, its entry.
        let outcome = apart.map { preloader.fetchHint(hint, clientFields: head.headers, separateEntry: $0) }
            ?? preloader.fetchHint(hint)
        server.metrics.cmcd.hint(outcome)
    }
}
