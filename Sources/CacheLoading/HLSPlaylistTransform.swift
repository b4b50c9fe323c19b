// HLS playlists through the cache: the cache keeps the origin's bytes and
// this buffering transform rewrites every URI on the way out, so each client
// gets URIs on the host and port it reached the proxy with.

import CacheHTTP
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
/// to write instead; nil keeps the URI as written. Called on the loop thread.
package typealias HLSURIHook = @Sendable (_ absoluteURI: String, _ kind: HLSURIKind, _ proposed: String?) -> String?

/// Rewrites one playlist response. Buffering: the whole body is read, then
/// rewritten. A body that turns out not to be a playlist (sniffed by its
/// first bytes) or that cannot be rewritten (malformed) goes out unchanged,
/// with a log line: never a crash, never a wrong byte.
package final class HLSPlaylistTransform: BodyTransform {
    /// The URL relative URIs resolve against: the playlist's own, after redirects.
    let playlistURL: String
    let mode: HLSRewriteMode
    /// "host[:port]" the client reached the proxy with.
    let proxyHost: String
    let hook: HLSURIHook?
    let logger: Logger
    /// Origin URL to proxy path (see `TransformContext.proxyPath`).
    let proxyPath: (@Sendable (String) -> String?)?
    private var body: [UInt8] = []

    package init(playlistURL: String, mode: HLSRewriteMode, proxyHost: String, hook: HLSURIHook? = nil,
                 proxyPath: (@Sendable (String) -> String?)? = nil, logger: Logger) {
        self.proxyPath = proxyPath
        self.playlistURL = playlistURL
        self.mode = mode
        self.proxyHost = proxyHost
        self.hook = hook
        self.logger = logger
    }

    package var buffersWhole: Bool { true }

    /// The same type; the validators go, since the output depends on the
    /// client's Host and a strong ETag must name one exact body.
    package func outputInfo(_ stored: ContentInfo) -> ContentInfo {
        var info = stored
        info.etag = nil
        return info
    }

    package func inputRange(forOutput range: Range<Int64>, totalLength: Int64?) -> Range<Int64> { range }

    package func process(_ input: UnsafeRawBufferPointer, at offset: Int64, into output: inout [UInt8]) throws(TransformError) {
        guard offset == Int64(body.count) else { throw TransformError("playlist bytes out of order at \(offset)") }
        body.append(contentsOf: input)
    }

    package func finish(into output: inout [UInt8]) throws(TransformError) {
        defer { body = [] }
        output.append(contentsOf: rewritten(body))
    }

    /// The bytes a client gets for `playlist`.
    package func rewritten(_ playlist: [UInt8]) -> [UInt8] {
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

/// Chooses the HLS transform for responses that are playlists.
package enum HLSTransforms {
    /// A provider rewriting playlists in `mode`; nil for other responses.
    /// A generic type (octet-stream, text/plain, none) without a playlist
    /// extension is recognised by its cached first bytes only: buffering
    /// unknown bodies to look at them would cost media its zero-copy path
    /// and its ranges (so the first response of such a playlist on a cold
    /// cache goes out unchanged).
    package static func provider(mode: HLSRewriteMode, hook: HLSURIHook?, logger: Logger) -> TransformProvider {
        { context in
            let mode = context.requestMode ?? mode
            if mode == .forward && hook == nil { return nil }  // unchanged: keep zero-copy
            guard let proxyHost = context.clientHost, !proxyHost.isEmpty else { return nil }
            let path = context.path ?? OriginURL.parse(context.url)?.pathAndQuery ?? context.url
            guard context.isPlaylist ?? HLS.isPlaylist(contentType: context.info.contentType, path: path,
                                                       bodyPrefix: context.bodyPrefix ?? [])
            else { return nil }
            return HLSPlaylistTransform(playlistURL: context.finalURL ?? context.url, mode: mode,
                                        proxyHost: proxyHost, hook: hook, proxyPath: context.proxyPath, logger: logger)
        }
    }
}
