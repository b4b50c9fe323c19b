// HLS playlists through the cache: the cache keeps the origin's bytes and
// this buffering transform rewrites every URI on the way out, so each client
// gets URIs on the host and port it reached the proxy with.

import CacheHTTP
import CacheIO
import CacheStorage
import Logging

/// How the URIs of a playlist served by the proxy are written.
package enum HLSRewriteMode: Sendable, Equatable {
    /// Proxy-URL mode: every http(s) URI becomes a proxy URL
    /// (`http://HOST/p/<origin>/<name>`) on the Host the client used.
    case proxyURLs
    /// Forward-proxy mode: the client already sends every request through
    /// the proxy, so the playlist passes unchanged.
    case forward
    /// Reverse-proxy mode: absolute URIs on the origin's host (`host[:port]`,
    /// any case) are pointed at the proxy's host; relative URIs and other
    /// hosts stay as written.
    case reverse(originHost: String)
}

/// Replaces the default URI mapping: gets the absolute URI, its role and the
/// mapping the mode would use (nil when the mode keeps it), and returns what
/// to write instead; nil keeps the URI as written. Called on the loop thread, or on a pool thread for a large playlist.
package typealias HLSURIHook = @Sendable (_ absoluteURI: String, _ kind: HLSURIKind, _ proposed: String?) -> String?

/// Rewrites one playlist response (`BodyTransform.rewritePlaylist`): the
/// whole body is read, then rewritten. A body that turns out not to be a
/// playlist (sniffed by its first bytes) or that cannot be rewritten
/// (malformed) goes out unchanged, with a log line: never a crash, never a
/// wrong byte. A value: a large playlist is rewritten off the loop.
package struct HLSPlaylistTransform: Sendable {
    /// The URL relative URIs resolve against: the playlist's own, after redirects.
    let playlistURL: String
    let mode: HLSRewriteMode
    /// "host[:port]" the client reached the proxy with.
    let proxyHost: String
    let hook: HLSURIHook?
    /// How an origin URL becomes a path on this proxy; nil: the unsigned
    /// proxy URL. In LAN mode it signs (the proxy refuses unsigned ones), and
    /// gives nil for destinations the policy refuses: the URI is then left as
    /// written, so a playlist cannot make the proxy sign any address.
    let proxyPath: (@Sendable (String) -> String?)?
    let logger: Logger

    package init(playlistURL: String, mode: HLSRewriteMode, proxyHost: String, hook: HLSURIHook? = nil,
                 proxyPath: (@Sendable (String) -> String?)? = nil, logger: Logger) {
        self.playlistURL = playlistURL
        self.mode = mode
        self.proxyHost = proxyHost
        self.hook = hook
        self.proxyPath = proxyPath
        self.logger = logger
    }

    /// The bytes a client gets for `playlist`. A playlist stored gzip
    /// (`Content-Encoding: gzip`, as object stores serve them) is decoded,
    /// rewritten and encoded again, so the stored head's coding still holds;
    /// one that cannot be decoded passes unchanged.
    package func rewritten(_ playlist: [UInt8]) -> [UInt8] {
        guard Gzip.isGzip(playlist) else { return rewrittenPlain(playlist) }
        // (The proxy inflates before calling: `BodySource`, off the loop, each failure remembered.)
        switch GzipRewrite.apply(playlist, rewrittenPlain) {
        case .rewritten(let bytes): return bytes
        case .undecodable:
            logger.warning("playlist passed through unchanged: cannot decode its gzip body",
                           metadata: ["url": "\(playlistURL)"])
            return playlist
        }
    }

    private func rewrittenPlain(_ playlist: [UInt8]) -> [UInt8] {
        guard HLS.startsWithPlaylistHeader(playlist) else { return playlist }
        if mode == .forward && hook == nil { return playlist }
        do {
            return try HLS.rewrite(playlist, playlistURL: playlistURL) { absolute, written, kind in
                let proposed = map(absolute, written)
                return hook.map { $0(absolute, kind, proposed) } ?? proposed
            }
        } catch {
            logger.warning("playlist passed through unchanged: cannot rewrite it",
                           metadata: ["url": "\(playlistURL)", "error": "\(error)"])
            return playlist
        }
    }

    /// The default mapping of the mode.
    private func map(_ absolute: String, _ written: UnsafeBufferPointer<UInt8>) -> String? {
        switch mode {
        case .forward:
            return nil
        case .proxyURLs:
            let path = proxyPath.map { $0(absolute) } ?? ProxyURL.path(forOrigin: absolute)
            return path.map { "http://" + proxyHost + $0 }
        case .reverse(let originHost):
            // Only URIs written absolute name a host; relative ones already lead to the proxy.
            guard Self.namesHost(written), let url = OriginURL.parse(absolute),
                  url.hostHeader.lowercased() == originHost.lowercased() else { return nil }
            return "http://" + proxyHost + url.pathAndQuery
        }
    }

    /// Whether a URI as written names a host: "http:", "https:" (any case) or "//".
    static func namesHost(_ written: UnsafeBufferPointer<UInt8>) -> Bool {
        if written.starts(with: "//".utf8) { return true }
        let lowered = written.prefix(8).map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        return lowered.starts(with: "http://".utf8) || lowered.starts(with: "https://".utf8)
    }
}

extension HLSPlaylistTransform {
    /// The rewrite of a response known to be a playlist, in `mode`; nil when
    /// it would pass unchanged (forward mode without a hook: kept zero-copy)
    /// or the client named no Host to point URIs at.
    package static func choose(playlistURL: String, mode: HLSRewriteMode, clientHost: String?, hook: HLSURIHook?,
                               proxyPath: (@Sendable (String) -> String?)?, logger: Logger) -> HLSPlaylistTransform? {
        if mode == .forward && hook == nil { return nil }
        guard let clientHost, !clientHost.isEmpty else { return nil }
        return HLSPlaylistTransform(playlistURL: playlistURL, mode: mode, proxyHost: clientHost, hook: hook,
                                    proxyPath: proxyPath, logger: logger)
    }
}
