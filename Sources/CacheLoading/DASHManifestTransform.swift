// DASH manifests through the cache: like playlists, the cache keeps the
// origin's bytes and this buffering transform rewrites every URL of the MPD
// on the way out. Proxy URLs are written in the base form (ProxyURL `/t/`),
// which keeps the origin's path tail verbatim: the player still fills in
// `$Number$` and the other template identifiers, and the result still maps
// to the right origin URL.

import CacheHTTP
import Logging

/// Replaces the default URL mapping of an MPD: gets the absolute URL, its
/// role and the mapping the mode would use (nil when it keeps the URL),
/// returns what to write instead; nil keeps the URL as written. Called on
/// the loop thread, or on a pool thread for a large manifest.
package typealias MPDURLHook = @Sendable (_ absoluteURL: String, _ kind: MPDURLKind, _ proposed: String?) -> String?

/// Rewrites one MPD response (`BodyTransform.rewriteManifest`). A body that
/// is not an MPD goes out unchanged; one that is not well-formed too, with a warning:
/// never a crash, never a wrong byte. A value: a large one is rewritten
/// off the loop.
package struct DASHManifestTransform: Sendable {
    /// The URL relative URLs resolve against: the manifest's own, after redirects.
    let manifestURL: String
    /// The modes of playlists apply as they are.
    let mode: HLSRewriteMode
    /// "host[:port]" the client reached the proxy with.
    let proxyHost: String
    let hook: MPDURLHook?
    /// How an origin URL (a template when the flag says so) becomes a
    /// base-form path on this proxy; nil: unsigned. In LAN mode it signs,
    /// and gives nil for destinations the policy refuses (left as written).
    let proxyPath: (@Sendable (String, Bool) -> String?)?
    let logger: Logger

    package init(manifestURL: String, mode: HLSRewriteMode, proxyHost: String, hook: MPDURLHook? = nil,
                 proxyPath: (@Sendable (String, Bool) -> String?)? = nil, logger: Logger) {
        self.manifestURL = manifestURL
        self.mode = mode
        self.proxyHost = proxyHost
        self.hook = hook
        self.proxyPath = proxyPath
        self.logger = logger
    }

    /// The bytes a client gets for `manifest`.
    package func rewritten(_ manifest: [UInt8]) -> [UInt8] {
        // Not an MPD after all (sniffed by its root element): passed on as it is.
        guard DASH.startsWithMPDRoot(manifest) else { return manifest }
        if mode == .forward && hook == nil { return manifest }
        do {
            return try DASH.rewrite(manifest, manifestURL: manifestURL) { absolute, written, kind in
                let proposed = kind.isKeptByDefault ? nil : map(absolute, written, template: kind.isTemplate)
                return hook.map { $0(absolute, kind, proposed) } ?? proposed
            }
        } catch {
            logger.warning("manifest passed through unchanged: cannot rewrite it",
                           metadata: ["url": "\(manifestURL)", "error": "\(error)"])
            return manifest
        }
    }

    /// The default mapping of the mode.
    private func map(_ absolute: String, _ written: String, template: Bool) -> String? {
        switch mode {
        case .forward:
            return nil
        case .proxyURLs:
            let path = proxyPath.map { $0(absolute, template) }
                ?? ProxyURL.basePath(forOrigin: absolute, cutBefore: template ? UInt8(ascii: "$") : nil)
            return path.map { "http://" + proxyHost + $0 }
        case .reverse(let originHost):
            var copy = written
            let namesHost = copy.withUTF8 { HLSPlaylistTransform.namesHost($0) }
            guard namesHost, let url = OriginURL.parse(absolute),
                  url.hostHeader.lowercased() == originHost.lowercased() else { return nil }
            return "http://" + proxyHost + url.pathAndQuery
        }
    }
}

extension DASHManifestTransform {
    /// The rewrite of a response known to be an MPD, in `mode`; nil when it
    /// would pass unchanged or the client named no Host.
    package static func choose(manifestURL: String, mode: HLSRewriteMode, clientHost: String?, hook: MPDURLHook?,
                               proxyPath: (@Sendable (String, Bool) -> String?)?, logger: Logger) -> DASHManifestTransform? {
        if mode == .forward && hook == nil { return nil }
        guard let clientHost, !clientHost.isEmpty else { return nil }
        return DASHManifestTransform(manifestURL: manifestURL, mode: mode, proxyHost: clientHost, hook: hook,
                                     proxyPath: proxyPath, logger: logger)
    }
}
