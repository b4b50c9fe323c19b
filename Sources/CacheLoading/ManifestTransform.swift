// HLS playlists and DASH manifests through the cache: the cache keeps the
// origin's bytes and this buffering transform rewrites every URL on the way
// out, so each client gets URLs on the host and port it reached the proxy
// with. One path for both formats (sniff, mode, map; inflating is GzipRewrite's); the
// format only says how its text is scanned and how a proxy URL is written.

import CacheHTTP
import Logging

/// How the URLs of a playlist or manifest served by the proxy are written.
package enum ManifestRewriteMode: Sendable, Equatable {
    /// Proxy-URL mode: every http(s) URL becomes a proxy URL on the Host
    /// the client used (HLS: `/p/<origin>`; DASH: the base form `/t/`, which
    /// keeps the path tail verbatim for `$Number$` and the other templates).
    case proxyURLs
    /// Forward-proxy mode: the client already sends every request through
    /// the proxy, so the body passes unchanged (unless a host hook maps it).
    case forward
    /// Reverse-proxy mode: absolute URLs on the origin's host (`host[:port]`,
    /// any case) are pointed at the proxy's host; relative URLs and other
    /// hosts stay as written.
    case reverse(originHost: String)
}

/// Replaces the default URI mapping of a playlist: gets the absolute URI, its
/// role and the mapping the mode would use (nil when the mode keeps it), and
/// returns what to write instead; nil keeps the URI as written. Called on the
/// loop thread, or on a pool thread for a large playlist.
package typealias HLSURIHook = @Sendable (_ absoluteURI: String, _ kind: HLSURIKind, _ proposed: String?) -> String?

/// The same for the URLs of an MPD.
package typealias MPDURLHook = @Sendable (_ absoluteURL: String, _ kind: MPDURLKind, _ proposed: String?) -> String?

/// Rewrites one playlist or manifest response (`BodyTransform.rewriteManifest`):
/// the whole body is read, then rewritten. A body stored gzip
/// (`Content-Encoding: gzip`, as object stores serve them) is inflated,
/// rewritten and deflated again around this transform (`GzipRewrite`), so the
/// stored head's coding still holds. A body that turns out not to be of its
/// format (sniffed by its first bytes) or cannot be rewritten goes out unchanged, with a log
/// line: never a crash, never a wrong byte. A value: a large body is
/// rewritten off the loop.
package struct ManifestTransform: Sendable {
    /// The format and its per-format parts.
    package enum Format: Sendable {
        /// An HLS playlist. `proxyPath` turns an origin URL into a path on this
        /// proxy (nil: the unsigned proxy URL); in LAN mode it signs and gives
        /// nil for destinations the policy refuses, left as written, so a
        /// playlist cannot make the proxy sign any address.
        case hls(hook: HLSURIHook?, proxyPath: (@Sendable (String) -> String?)?)
        /// A DASH MPD. `proxyPath` gets the URL and whether it is a template
        /// (cut before its first `$`), and gives a base-form path.
        case dash(hook: MPDURLHook?, proxyPath: (@Sendable (String, Bool) -> String?)?)

        var hasHook: Bool {
            switch self {
            case .hls(let hook, _): return hook != nil
            case .dash(let hook, _): return hook != nil
            }
        }

        var noun: String {
            if case .hls = self { return "playlist" }
            return "manifest"
        }
    }

    /// The URL relative URLs resolve against: the body's own, after redirects.
    let url: String
    let mode: ManifestRewriteMode
    /// "host[:port]" the client reached the proxy with.
    let proxyHost: String
    let format: Format
    let logger: Logger

    package init(url: String, mode: ManifestRewriteMode, proxyHost: String, format: Format, logger: Logger) {
        self.url = url
        self.mode = mode
        self.proxyHost = proxyHost
        self.format = format
        self.logger = logger
    }

    /// The rewrite of a response known to be of `format`, in `mode`; nil when
    /// it would pass unchanged (forward mode without a hook: kept zero-copy)
    /// or the client named no Host to point URLs at.
    package static func choose(url: String, mode: ManifestRewriteMode, clientHost: String?, format: Format,
                               logger: Logger) -> ManifestTransform? {
        if mode == .forward && !format.hasHook { return nil }
        guard let clientHost, !clientHost.isEmpty else { return nil }
        return ManifestTransform(url: url, mode: mode, proxyHost: clientHost, format: format, logger: logger)
    }

    /// The bytes a client gets for the plain text `body`. A body stored gzip
    /// reaches this already inflated (`BodySource`: `GzipRewrite` off the
    /// loop, a failure remembered per version), so inflating lives in one place.
    package func rewritten(_ body: [UInt8]) -> [UInt8] {
        if mode == .forward && !format.hasHook { return body }
        do {
            switch format {
            case .hls(let hook, let proxyPath):
                guard HLS.startsWithPlaylistHeader(body) else { return body }
                return try HLS.rewrite(body, playlistURL: url) { absolute, written, kind in
                    let proposed = map(absolute, namesHost: Self.namesHost(written)) {
                        proxyPath.map { $0(absolute) } ?? ProxyURL.path(forOrigin: absolute)
                    }
                    return hook.map { $0(absolute, kind, proposed) } ?? proposed
                }
            case .dash(let hook, let proxyPath):
                guard DASH.startsWithMPDRoot(body) else { return body }
                return try DASH.rewrite(body, manifestURL: url) { absolute, written, kind in
                    var text = written
                    let proposed = kind.isKeptByDefault ? nil
                        : map(absolute, namesHost: text.withUTF8 { Self.namesHost($0) }) {
                            proxyPath.map { $0(absolute, kind.isTemplate) }
                                ?? ProxyURL.basePath(forOrigin: absolute,
                                                     cutBefore: kind.isTemplate ? UInt8(ascii: "$") : nil)
                        }
                    return hook.map { $0(absolute, kind, proposed) } ?? proposed
                }
            }
        } catch {
            logger.warning("\(format.noun) passed through unchanged: cannot rewrite it",
                           metadata: ["url": "\(url)", "error": "\(error)"])
            return body
        }
    }

    /// The default mapping of the mode, shared by the formats; `proxyPath`
    /// is the format's path on this proxy for proxy-URL mode.
    private func map(_ absolute: String, namesHost: Bool, proxyPath: () -> String?) -> String? {
        switch mode {
        case .forward:
            return nil
        case .proxyURLs:
            return proxyPath().map { "http://" + proxyHost + $0 }
        case .reverse(let originHost):
            // Only URLs written absolute name a host; relative ones already lead to the proxy.
            guard namesHost, let origin = OriginURL.parse(absolute),
                  origin.hostHeader.lowercased() == originHost.lowercased() else { return nil }
            return "http://" + proxyHost + origin.pathAndQuery
        }
    }

    /// Whether a URL as written names a host: "http:", "https:" (any case) or "//".
    static func namesHost(_ written: UnsafeBufferPointer<UInt8>) -> Bool {
        if written.starts(with: "//".utf8) { return true }
        let lowered = written.prefix(8).map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        return lowered.starts(with: "http://".utf8) || lowered.starts(with: "https://".utf8)
    }
}
