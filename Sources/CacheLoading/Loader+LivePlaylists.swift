// A live HLS playlist is reused for at most half its target duration (RFC 8216 §6.3.4), then checked with the
// origin; VOD and master playlists are cached like any resource; low-latency blocking reloads pass through,
// not kept. A live DASH MPD is reused for at most its `minimumUpdatePeriod` (else half its longest segment).

import CacheHTTP
import CacheStorage
import Glibc

extension Loader {
    /// Playlists are read (to see whether they are live) only up to this size.
    static let livePlaylistReadLimit: Int64 = 4 << 20

    /// Milliseconds a cached live playlist or MPD may be reused; nil when not live.
    /// Decided once per version (the resource's derived facts), not per request.
    func liveReuseMilliseconds(_ state: ResourceState) -> Int64? {
        let resource = state.resource
        if let known = resource.derived.liveReuse { return known }
        guard let total = resource.totalLength, total > 0, total <= Self.livePlaylistReadLimit,
              resource.isComplete else { return nil }
        let milliseconds = Self.readLiveReuse(resource, total: total)
        resource.derived.liveReuse = .some(milliseconds)
        return milliseconds
    }

    private static let playlistHeader = Array("#EXTM3U".utf8)
    private static let manifestRoot = Array("<MPD".utf8)

    /// May a body starting with `sample` be a playlist or manifest (`#` or `<` first)?
    private static func mayBeText(_ sample: [UInt8]) -> Bool {
        sample.withUnsafeBufferPointer { bytes in
            let i = textStart(bytes, skippingBlanks: true)
            return i == bytes.count || bytes[i] == UInt8(ascii: "#") || bytes[i] == UInt8(ascii: "<")
        }
    }

    private static func readLiveReuse(_ resource: Resource, total: Int64) -> Int64? {
        // Cheapest first (every entry's first use comes here): the first bytes, when known (read off
        // the loop with the entry), rule most bodies out; then, could the type be one?
        if let sample = resource.derived.headSample, !mayBeText(sample) { return nil }
        let type = resource.metadata.contentType
        let maybePlaylist = HLS.isPlaylist(contentType: type, path: "", bodyPrefix: Self.playlistHeader)
        let maybeManifest = DASH.isManifest(contentType: type, path: "", bodyPrefix: Self.manifestRoot)
        guard maybePlaylist || maybeManifest else { return nil }
        guard let file = try? resource.dataFile(), let bytes = file.read(0..<total) else { return nil }
        if maybeManifest, DASH.startsWithMPDRoot(bytes) {
            return (try? MPDManifest.parse(bytes, manifestURL: resource.url))?.liveReuseMilliseconds
        }
        guard HLS.startsWithPlaylistHeader(bytes),
              let playlist = try? HLSPlaylist.parse(bytes, playlistURL: resource.url),
              let media = playlist.media, media.isLive else { return nil }
        return Int64(media.liveReuseMilliseconds)
    }

    /// A live playlist past its window that nothing reads is fetched anew (one in use is validated,
    /// `needsValidation`): rewritten within a second at the same length it keeps nginx's validators.
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
