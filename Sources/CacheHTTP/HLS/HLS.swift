/// HLS (RFC 8216, rfc8216bis), pure and byte-based: detection, `rewrite` (every URI leads back
/// to the proxy), parsing (what a preloader fetches), live rules. Bad input throws `HLSError`
/// (never traps) rather than guessing; a proxy may fall back to the origin's bytes.
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
