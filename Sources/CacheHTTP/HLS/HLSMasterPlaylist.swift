/// RESOLUTION ("1920x1080").
package struct HLSResolution: Sendable, Equatable {
    package var width: Int
    package var height: Int
}

/// EXT-X-STREAM-INF with its URI line.
package struct HLSVariant: Sendable, Equatable {
    package var uri: String
    package var bandwidth: Int  // BANDWIDTH: peak bits per second
    package var averageBandwidth: Int?
    package var resolution: HLSResolution?
    package var codecs: String?
    package var frameRate: Double?
    package var audioGroup: String?  // GROUP-ID of the EXT-X-MEDIA renditions of each type this variant uses
    package var videoGroup: String?
    package var subtitlesGroup: String?
    package var closedCaptionsGroup: String?  // CLOSED-CAPTIONS group; nil for absent or NONE
}

/// EXT-X-I-FRAME-STREAM-INF.
package struct HLSIFrameStream: Sendable, Equatable {
    package var uri: String
    package var bandwidth: Int
    package var averageBandwidth: Int?
    package var resolution: HLSResolution?
    package var codecs: String?
    package var videoGroup: String?
}

package enum HLSRenditionType: String, Sendable, Equatable {
    case audio = "AUDIO", video = "VIDEO", subtitles = "SUBTITLES", closedCaptions = "CLOSED-CAPTIONS"
}

/// EXT-X-MEDIA.
package struct HLSRendition: Sendable, Equatable {
    package var type: HLSRenditionType
    package var groupID: String
    package var name: String
    package var language: String?
    package var uri: String?  // nil when carried inside the variant streams
    package var isDefault: Bool = false
    package var autoselect: Bool = false
}

/// EXT-X-CONTENT-STEERING.
package struct HLSContentSteering: Sendable, Equatable {
    package var serverURI: String
    package var pathwayID: String?
}

/// The multivariant playlist as values: what a preloader needs to pick a variant and its
/// renditions. http(s) URIs are absolute, others as written.
package struct HLSMasterPlaylist: Sendable, Equatable {
    package var variants: [HLSVariant] = []  // in playlist order
    package var iFrameStreams: [HLSIFrameStream] = []
    package var renditions: [HLSRendition] = []
    package var sessionKeys: [HLSKey] = []
    package var contentSteering: HLSContentSteering?
}
