// HLS playlists and DASH manifests: the cache keeps the origin's bytes and this transform rewrites every URL
// on the way out, onto the host and port each client reached the proxy with. One path for both formats; a
// format says how its text is scanned and how a proxy URL is written.

import CacheHTTP
import Logging

/// How the URLs of a playlist or manifest served by the proxy are written.
package enum ManifestRewriteMode: Sendable, Equatable {
    /// Every http(s) URL becomes a proxy URL on the client's Host (HLS: `/p/<origin>`;
    /// DASH: the base form `/t/`, keeping the path tail verbatim for templates).
    case proxyURLs
    /// Requests already go through the proxy: unchanged (unless a host hook maps it).
    case forward
    /// Absolute URLs on the origin's `host[:port]` (any case) point at the proxy; others stay as written.
    case reverse(originHost: String)
}

/// Replaces a playlist's default URI mapping: gets the absolute URI, its role and the mode's mapping (nil:
/// kept), returns what to write (nil: as written). Called on the loop, or a pool thread for a large playlist.
package typealias HLSURIHook = @Sendable (_ absoluteURI: String, _ kind: HLSURIKind, _ proposed: String?) -> String?

/// The same for the URLs of an MPD.
package typealias MPDURLHook = @Sendable (_ absoluteURL: String, _ kind: MPDURLKind, _ proposed: String?) -> String?

/// Rewrites one whole playlist or manifest body (`BodyTransform.rewriteManifest`); a gzip one is inflated and
/// deflated around it (`GzipRewrite`), so the stored coding holds. A body not of its format (sniffed) or not
/// rewritable goes out unchanged, with a log line. A value: a large body is rewritten off the loop.
package struct ManifestTransform: Sendable {
    package enum Format: Sendable {
        /// `proxyPath`: an origin URL's path on this proxy (nil: unsigned); in LAN mode it
        /// signs, and refused destinations stay as written (no signing any address).
        case hls(hook: HLSURIHook?, proxyPath: (@Sendable (String) -> String?)?)
        /// `proxyPath` gets the URL and whether it is a template (cut before its first `$`).
        case dash(hook: MPDURLHook?, proxyPath: (@Sendable (String, Bool) -> String?)?)

        var hasHook: Bool {
            switch self {
            case .hls(let hook, _): return hook != nil
            case .dash(let hook, _): return hook != nil
            }
        }

        var noun: String { if case .hls = self { "playlist" } else { "manifest" } }
    }

    /// The URL relative URLs resolve against: the body's own, after redirects.
    let url: String
    let mode: ManifestRewriteMode
    /// "host[:port]" the client reached the proxy with.
    let proxyHost: String
    let format: Format
    let logger: Logger

    /// The rewrite of a response of `format` in `mode`; nil when it would pass unchanged
    /// (forward mode without a hook: kept zero-copy) or the client named no Host.
    package static func choose(url: String, mode: ManifestRewriteMode, clientHost: String?, format: Format,
                               logger: Logger) -> ManifestTransform? {
        if mode == .forward && !format.hasHook { return nil }
        guard let clientHost, !clientHost.isEmpty else { return nil }
        return ManifestTransform(url: url, mode: mode, proxyHost: clientHost, format: format, logger: logger)
    }

    /// The bytes a client gets for the plain text `body` (a gzip one arrives inflated).
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

    /// The mode's default mapping; `proxyPath`: the format's path for proxy-URL mode.
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
