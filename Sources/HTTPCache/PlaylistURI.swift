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
    /// DASH: a `BaseURL`.
    case baseURL
    /// DASH: a `SegmentTemplate` URL (`media`, `initialization`, …) with `$…$` identifiers players fill in.
    case segmentTemplate
    /// DASH: `Location`, `PatchLocation` or a remote element's `xlink:href`.
    case manifest
    /// DASH: a licence server in `ContentProtection`; kept by default.
    case licence
    /// DASH: a `UTCTiming` server; kept by default.
    case timing

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

    init(_ kind: MPDURLKind) {
        switch kind {
        case .baseURL: self = .baseURL
        case .mediaTemplate, .initializationTemplate, .indexTemplate, .bitstreamSwitchingTemplate: self = .segmentTemplate
        case .segment, .segmentIndex, .representationIndex, .bitstreamSwitching: self = .segment
        case .initialization: self = .initSection
        case .location, .patchLocation, .remoteElement: self = .manifest
        case .licence: self = .licence
        case .timing: self = .timing
        }
    }
}

/// One URI of a playlist or DASH manifest being rewritten (see `HTTPCacheConfiguration.playlistURIRewriter`).
public struct PlaylistURI: Sendable, Equatable {
    /// The URI resolved against the playlist's URL (query kept), in an MPD the BaseURL in scope (`$…$` kept).
    public var absoluteURL: String
    public var role: PlaylistURIRole
    /// What the proxy writes by default (a proxy URL on the client's Host); nil: the URI as written.
    public var proxyURL: String?
}

extension HTTPCacheConfiguration {
    /// `playlistURIRewriter` as the engine calls it for HLS playlists and DASH manifests.
    var playlistURIHook: HLSURIHook? { uriHook(PlaylistURIRole.init) }
    var manifestURLHook: MPDURLHook? { uriHook(PlaylistURIRole.init) }

    private func uriHook<Kind>(_ role: @escaping @Sendable (Kind) -> PlaylistURIRole)
        -> (@Sendable (String, Kind, String?) -> String?)? {
        guard let rewrite = playlistURIRewriter else { return nil }
        return { absolute, kind, proposed in rewrite(PlaylistURI(absoluteURL: absolute, role: role(kind), proxyURL: proposed)) }
    }
}
