// HLS playlists (RFC 8216, draft-pantos-hls-rfc8216bis), pure and byte-based: `HLS.isPlaylist`,
// `HLS.rewrite` (every URI mapped, so it leads back to the proxy), `HLSPlaylist.parse` (what a
// preloader fetches), the live rules. On bad input the rewriter and parser throw `HLSError`
// (never trap) rather than guess; a proxy may fall back to the origin's bytes.

package enum HLS {}

extension HLSPlaylist {
    package var master: HLSMasterPlaylist? {
        if case .master(let m) = self { return m }
        return nil
    }

    package var media: HLSMediaPlaylist? {
        if case .media(let m) = self { return m }
        return nil
    }
}
