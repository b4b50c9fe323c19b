// Where a URI stands in a playlist: the rewriter hands it to the mapping
// closure so a proxy can tell playlists (which it rewrites again) from media.

/// The role of a URI in a playlist.
package enum HLSURIKind: Sendable, Equatable, CaseIterable {
    /// URI line after EXT-X-STREAM-INF: a media playlist.
    case variant
    /// Any other URI line: a media segment.
    case segment
    /// EXT-X-KEY URI: a key (or key server).
    case key
    /// EXT-X-SESSION-KEY URI.
    case sessionKey
    /// EXT-X-MAP URI: a media initialization section.
    case map
    /// EXT-X-MEDIA URI: a rendition's media playlist.
    case rendition
    /// EXT-X-I-FRAME-STREAM-INF URI: an I-frame media playlist.
    case iFrameStream
    /// EXT-X-SESSION-DATA URI: a JSON document.
    case sessionData
    /// EXT-X-PART URI: a partial segment.
    case part
    /// EXT-X-PRELOAD-HINT URI: a part or map the server will soon have.
    case preloadHint
    /// EXT-X-RENDITION-REPORT URI: another rendition's media playlist.
    case renditionReport
    /// EXT-X-CONTENT-STEERING SERVER-URI: a JSON steering manifest.
    case steeringManifest
    /// EXT-X-DATERANGE X-ASSET-URI: an interstitial's multivariant playlist.
    case interstitialAsset
    /// EXT-X-DATERANGE X-ASSET-LIST: a JSON list of interstitial assets.
    case interstitialAssetList

    /// Whether the resource is itself a playlist (and so worth rewriting).
    package var isPlaylist: Bool {
        switch self {
        case .variant, .rendition, .iFrameStream, .renditionReport, .interstitialAsset: return true
        default: return false
        }
    }
}
