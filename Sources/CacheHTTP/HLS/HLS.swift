// HLS playlists (RFC 8216 and draft-pantos-hls-rfc8216bis): detection,
// URI rewriting and parsing, pure and byte-based. The proxy rewrites
// playlists on the way out so that every URI in them leads back to it; a
// preloader reads them to know what to fetch.
//
// - `HLS.isPlaylist(contentType:path:bodyPrefix:)`: is a response a playlist.
// - `HLS.rewrite(_:playlistURL:map:)`: the same bytes with every URI mapped.
// - `HLSPlaylist.parse(_:playlistURL:)`: multivariant or media playlist values.
// - `HLSMasterPlaylist.variant(_:)` / `renditions(for:)`: what to preload.
// - `HLS.liveReuseMilliseconds(targetDuration:)`, `HLS.isBlockingReloadRequest(_:)`:
//   live rules.
//
// Bad input: both the rewriter and the parser throw `HLSError` (never trap)
// rather than guess. A proxy that would rather serve the origin's bytes
// unchanged falls back to them on error; the error says what and where.

/// Namespace of the stateless HLS functions (detection, rewriting, live rules).
package enum HLS {}

extension HLSPlaylist {
    /// The multivariant playlist, if this is one.
    package var master: HLSMasterPlaylist? {
        if case .master(let m) = self { return m }
        return nil
    }

    /// The media playlist, if this is one.
    package var media: HLSMediaPlaylist? {
        if case .media(let m) = self { return m }
        return nil
    }
}
