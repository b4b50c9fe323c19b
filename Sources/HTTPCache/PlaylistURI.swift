import CacheHTTP
import CacheLoading

/// What a URI in an HLS playlist stands for.
public enum PlaylistURIRole: Sendable, Equatable, CaseIterable {
    /// A media playlist after EXT-X-STREAM-INF.
    case variant
    case segment
    /// EXT-X-KEY / EXT-X-SESSION-KEY.
    case key, sessionKey
    /// EXT-X-MAP: an initialization section.
    case initSection
    /// EXT-X-MEDIA: a rendition's media playlist.
    case rendition
    case iFrameStream
    case sessionData
    /// EXT-X-PART and EXT-X-PRELOAD-HINT (low-latency).
    case part, preloadHint
    case renditionReport
    /// EXT-X-CONTENT-STEERING SERVER-URI.
    case steeringManifest
    /// EXT-X-DATERANGE X-ASSET-URI and X-ASSET-LIST (interstitials).
    case interstitialAsset, interstitialAssetList

    init(_ kind: HLSURIKind) {
        switch kind {
        case .variant: self = .variant
        case .segment: self = .segment
        case .key: self = .key
        case .sessionKey: self = .sessionKey
        case .map: self = .initSection
        case .rendition: self = .rendition
        case .iFrameStream: self = .iFrameStream
        case .sessionData: self = .sessionData
        case .part: self = .part
        case .preloadHint: self = .preloadHint
        case .renditionReport: self = .renditionReport
        case .steeringManifest: self = .steeringManifest
        case .interstitialAsset: self = .interstitialAsset
        case .interstitialAssetList: self = .interstitialAssetList
        }
    }
}

/// One URI of a playlist being rewritten (see `HTTPCacheConfiguration.playlistURIRewriter`).
public struct PlaylistURI: Sendable, Equatable {
    /// The URI resolved against the playlist's own URL (query kept).
    public var absoluteURL: String
    public var role: PlaylistURIRole
    /// What the proxy writes by default (a proxy URL on the Host the client
    /// used); nil when it would keep the URI as written.
    public var proxyURL: String?
}

extension HTTPCacheConfiguration {
    /// `playlistURIRewriter` as the engine calls it.
    var playlistURIHook: HLSURIHook? {
        guard let rewrite = playlistURIRewriter else { return nil }
        return { absolute, kind, proposed in
            rewrite(PlaylistURI(absoluteURL: absolute, role: PlaylistURIRole(kind), proxyURL: proposed))
        }
    }
}
