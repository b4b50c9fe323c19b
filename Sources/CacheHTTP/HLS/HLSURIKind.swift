/// Where a URI stands in a playlist: the mapping learns it, so a proxy tells playlists (which
/// it rewrites again) from media.
package enum HLSURIKind: Sendable, Equatable, CaseIterable {
    case variant                // URI line after EXT-X-STREAM-INF: a media playlist
    case segment                // any other URI line
    case key                    // EXT-X-KEY: a key (or key server)
    case sessionKey             // EXT-X-SESSION-KEY
    case map                    // EXT-X-MAP: a media initialization section
    case rendition              // EXT-X-MEDIA: a rendition's media playlist
    case iFrameStream           // EXT-X-I-FRAME-STREAM-INF: an I-frame media playlist
    case sessionData            // EXT-X-SESSION-DATA: a JSON document
    case part                   // EXT-X-PART: a partial segment
    case preloadHint            // EXT-X-PRELOAD-HINT: a part or map the server will soon have
    case renditionReport        // EXT-X-RENDITION-REPORT: another rendition's media playlist
    case steeringManifest       // EXT-X-CONTENT-STEERING SERVER-URI: a JSON steering manifest
    case interstitialAsset      // EXT-X-DATERANGE X-ASSET-URI: an interstitial's multivariant playlist
    case interstitialAssetList  // EXT-X-DATERANGE X-ASSET-LIST: a JSON list of interstitial assets

    /// Worth rewriting.
    package var isPlaylist: Bool {
        switch self {
        case .variant, .rendition, .iFrameStream, .renditionReport, .interstitialAsset: return true
        default: return false
        }
    }
}
