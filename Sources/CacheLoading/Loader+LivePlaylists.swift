// Live HLS playlists change while they are cached: one may be reused for at
// most half its target duration (RFC 8216 §6.3.4), then it is checked with
// the origin before it is served again, so a client never sees a copy older
// than the protocol allows. VOD and master playlists are cached like any
// resource. Low-latency blocking reloads (_HLS_msn, _HLS_part, _HLS_skip)
// wait for a playlist that does not exist yet: they pass through, not kept.
// A live DASH manifest (`type="dynamic"`) is reused for at most its
// `minimumUpdatePeriod` (half its longest segment when it has none), then
// fetched anew the same way.

import CacheHTTP
import CacheStorage
import Glibc

extension Loader {
    /// Playlists are read (to see whether they are live) only up to this size.
    static let livePlaylistReadLimit: Int64 = 4 << 20

    /// Milliseconds a cached copy of this resource may be reused: half the
    /// target duration when it is a complete live media playlist, the
    /// update period of a live MPD (`MPDManifest.liveReuseMilliseconds`); nil otherwise.
    /// Parsed once per version (`ResourceState.liveReuse`).
    func liveReuseMilliseconds(_ state: ResourceState) -> Int64? {
        let resource = state.resource
        // Decided once per version (the resource's derived facts), not per request.
        if let known = resource.derived.liveReuse { return known }
        guard let total = resource.totalLength, total > 0, total <= Self.livePlaylistReadLimit,
              resource.isComplete else { return nil }
        let milliseconds = Self.readLiveReuse(resource, total: total)
        resource.derived.liveReuse = .some(milliseconds)
        return milliseconds
    }

    private static let playlistHeader = Array("#EXTM3U".utf8)
    private static let manifestRoot = Array("<MPD".utf8)

    /// Whether a body starting with `sample` may be a playlist (`#EXTM3U`
    /// after a byte-order mark) or a manifest (`<` after one and white space).
    private static func mayBeText(_ sample: [UInt8]) -> Bool {
        sample.withUnsafeBufferPointer { bytes in
            let i = textStart(bytes, skippingBlanks: true)
            return i == bytes.count || bytes[i] == UInt8(ascii: "#") || bytes[i] == UInt8(ascii: "<")
        }
    }

    private static func readLiveReuse(_ resource: Resource, total: Int64) -> Int64? {
        // Cheapest first (every entry's first use comes here). A type that
        // could be a playlist (or manifest) when the body says so, whatever the path:
        let type = resource.metadata.contentType
        let maybePlaylist = HLS.isPlaylist(contentType: type, path: "", bodyPrefix: Self.playlistHeader)
        let maybeManifest = DASH.isManifest(contentType: type, path: "", bodyPrefix: Self.manifestRoot)
        guard maybePlaylist || maybeManifest else { return nil }
        // The first bytes, when known (read off the loop with the entry), rule most bodies out unread.
        if let sample = resource.derived.headSample, !mayBeText(sample) { return nil }
        guard let file = try? resource.dataFile(), let bytes = file.read(0..<total) else { return nil }
        if maybeManifest, DASH.startsWithMPDRoot(bytes) {
            return (try? MPDManifest.parse(bytes, manifestURL: resource.url))?.liveReuseMilliseconds
        }
        guard HLS.startsWithPlaylistHeader(bytes),
              let playlist = try? HLSPlaylist.parse(bytes, playlistURL: resource.url),
              let media = playlist.media, media.isLive else { return nil }
        return Int64(media.liveReuseMilliseconds)
    }

    /// A live playlist past its reuse window, that nothing is reading: drop
    /// the cached copy so this request fetches it anew. (A copy in use is
    /// checked with the origin instead, see `needsValidation`.) A refetch,
    /// rather than a validation, because a playlist rewritten within the
    /// same second at the same length keeps nginx's validators.
    func dropExpiredLivePlaylist(_ state: ResourceState) {
        let resource = state.resource
        guard resource.users == 0, state.downloads.isEmpty, state.headKnown,
              let window = liveReuseMilliseconds(state) else { return }
        if let fetchedAt = resource.validatedAt, store.clock() - fetchedAt < window { return }
        logger.debug("live playlist past its reuse window: fetching it again",
                     metadata: ["url": "\(resource.url)", "window_ms": "\(window)"])
        resource.reset(url: resource.url)
        state.headKnown = false
    }
}
