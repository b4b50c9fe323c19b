// The multivariant ("master") playlist as values: what a preloader needs to
// pick a variant and the renditions that go with it. URIs are absolute
// (resolved against the playlist URL) when they are http(s), else as written.

/// Width and height of a RESOLUTION attribute ("1920x1080").
package struct HLSResolution: Sendable, Equatable {
    package var width: Int
    package var height: Int

    package init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}

/// An EXT-X-STREAM-INF tag with its URI line.
package struct HLSVariant: Sendable, Equatable {
    package var uri: String
    /// BANDWIDTH: peak bits per second.
    package var bandwidth: Int
    package var averageBandwidth: Int?
    package var resolution: HLSResolution?
    package var codecs: String?
    package var frameRate: Double?
    /// GROUP-ID of the EXT-X-MEDIA renditions of each type this variant uses.
    package var audioGroup: String?
    package var videoGroup: String?
    package var subtitlesGroup: String?
    /// CLOSED-CAPTIONS group; nil for absent or NONE.
    package var closedCaptionsGroup: String?

    package init(uri: String, bandwidth: Int, averageBandwidth: Int? = nil, resolution: HLSResolution? = nil, codecs: String? = nil, frameRate: Double? = nil, audioGroup: String? = nil, videoGroup: String? = nil, subtitlesGroup: String? = nil, closedCaptionsGroup: String? = nil) {
        self.uri = uri
        self.bandwidth = bandwidth
        self.averageBandwidth = averageBandwidth
        self.resolution = resolution
        self.codecs = codecs
        self.frameRate = frameRate
        self.audioGroup = audioGroup
        self.videoGroup = videoGroup
        self.subtitlesGroup = subtitlesGroup
        self.closedCaptionsGroup = closedCaptionsGroup
    }
}

/// An EXT-X-I-FRAME-STREAM-INF tag: an I-frame media playlist.
package struct HLSIFrameStream: Sendable, Equatable {
    package var uri: String
    package var bandwidth: Int
    package var averageBandwidth: Int?
    package var resolution: HLSResolution?
    package var codecs: String?
    package var videoGroup: String?

    package init(uri: String, bandwidth: Int, averageBandwidth: Int? = nil, resolution: HLSResolution? = nil, codecs: String? = nil, videoGroup: String? = nil) {
        self.uri = uri
        self.bandwidth = bandwidth
        self.averageBandwidth = averageBandwidth
        self.resolution = resolution
        self.codecs = codecs
        self.videoGroup = videoGroup
    }
}

/// TYPE of an EXT-X-MEDIA tag.
package enum HLSRenditionType: Sendable, Equatable {
    case audio, video, subtitles, closedCaptions
}

/// An EXT-X-MEDIA tag: an alternative rendition.
package struct HLSRendition: Sendable, Equatable {
    package var type: HLSRenditionType
    package var groupID: String
    package var name: String
    package var language: String?
    /// nil when the rendition is carried inside the variant streams.
    package var uri: String?
    package var isDefault: Bool
    package var autoselect: Bool

    package init(type: HLSRenditionType, groupID: String, name: String, language: String? = nil, uri: String? = nil, isDefault: Bool = false, autoselect: Bool = false) {
        self.type = type
        self.groupID = groupID
        self.name = name
        self.language = language
        self.uri = uri
        self.isDefault = isDefault
        self.autoselect = autoselect
    }
}

/// EXT-X-CONTENT-STEERING.
package struct HLSContentSteering: Sendable, Equatable {
    package var serverURI: String
    package var pathwayID: String?

    package init(serverURI: String, pathwayID: String? = nil) {
        self.serverURI = serverURI
        self.pathwayID = pathwayID
    }
}

/// A multivariant playlist.
package struct HLSMasterPlaylist: Sendable, Equatable {
    /// In playlist order.
    package var variants: [HLSVariant] = []
    package var iFrameStreams: [HLSIFrameStream] = []
    package var renditions: [HLSRendition] = []
    /// EXT-X-SESSION-KEY tags.
    package var sessionKeys: [HLSKey] = []
    package var contentSteering: HLSContentSteering?

    package init(variants: [HLSVariant] = [], iFrameStreams: [HLSIFrameStream] = [], renditions: [HLSRendition] = [], sessionKeys: [HLSKey] = [], contentSteering: HLSContentSteering? = nil) {
        self.variants = variants
        self.iFrameStreams = iFrameStreams
        self.renditions = renditions
        self.sessionKeys = sessionKeys
        self.contentSteering = contentSteering
    }
}
