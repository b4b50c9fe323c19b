// The media playlist as values: segments with everything needed to fetch
// them (absolute URI, byte range with implicit offsets made explicit, the
// key and map in effect), low-latency parts and hints, and the live rules.

/// A sub-range of a resource, offsets made explicit.
package struct HLSByteRange: Sendable, Equatable {
    package var offset: Int64
    package var length: Int64

    /// Half-open, for a Range header or a cache lookup.
    package var range: Range<Int64> { offset..<(offset + length) }
}

/// METHOD of EXT-X-KEY / EXT-X-SESSION-KEY.
package enum HLSKeyMethod: Sendable, Equatable {
    case none, aes128, sampleAES, sampleAESCTR
    case other(String)

    init(_ s: String) {
        switch s {
        case "NONE": self = .none
        case "AES-128": self = .aes128
        case "SAMPLE-AES": self = .sampleAES
        case "SAMPLE-AES-CTR": self = .sampleAESCTR
        default: self = .other(s)
        }
    }
}

/// An EXT-X-KEY (or EXT-X-SESSION-KEY) tag.
package struct HLSKey: Sendable, Equatable {
    package var method: HLSKeyMethod
    /// Absolute when http(s); `skd://…`, `data:…` as written. nil for NONE.
    package var uri: String?
    /// The 16 bytes of IV, when the tag gives one.
    package var iv: [UInt8]?
    /// KEYFORMAT, "identity" when absent.
    package var keyFormat: String
    package var keyFormatVersions: String?

    package init(method: HLSKeyMethod, uri: String? = nil, iv: [UInt8]? = nil,
                 keyFormat: String = "identity", keyFormatVersions: String? = nil) {
        self.method = method
        self.uri = uri
        self.iv = iv
        self.keyFormat = keyFormat
        self.keyFormatVersions = keyFormatVersions
    }

    /// The IV to decrypt a segment with: the tag's, else the segment's media
    /// sequence number as a 128-bit big-endian integer (RFC 8216bis §5.2).
    package func iv(forMediaSequence sequence: Int) -> [UInt8] {
        if let iv { return iv }
        var out = [UInt8](repeating: 0, count: 16)
        var v = UInt64(truncatingIfNeeded: sequence)
        for i in stride(from: 15, through: 8, by: -1) {
            out[i] = UInt8(truncatingIfNeeded: v)
            v >>= 8
        }
        return out
    }
}

/// An EXT-X-MAP tag: the media initialization section.
package struct HLSMap: Sendable, Equatable {
    package var uri: String
    /// BYTERANGE; an omitted offset is 0.
    package var byteRange: HLSByteRange?
}

/// An EXT-X-PART tag.
package struct HLSPart: Sendable, Equatable {
    package var uri: String
    package var duration: Double
    package var byteRange: HLSByteRange?
    package var isIndependent: Bool = false
    package var isGap: Bool = false
}

/// TYPE of EXT-X-PRELOAD-HINT.
package enum HLSPreloadHintType: Sendable, Equatable {
    case part, map
    case other(String)
}

/// An EXT-X-PRELOAD-HINT tag: a resource the server will soon have.
package struct HLSPreloadHint: Sendable, Equatable {
    package var type: HLSPreloadHintType
    package var uri: String
    /// BYTERANGE-START (0 when absent) and BYTERANGE-LENGTH (nil: to the end).
    package var byteRangeStart: Int64 = 0
    package var byteRangeLength: Int64?
}

/// A media segment.
package struct HLSSegment: Sendable, Equatable {
    package var uri: String
    /// EXTINF duration, seconds.
    package var duration: Double
    /// EXTINF title; nil when empty.
    package var title: String?
    package var mediaSequence: Int = 0
    package var byteRange: HLSByteRange?
    /// Every EXT-X-KEY in effect (one per KEYFORMAT); `[NONE]` after
    /// METHOD=NONE, empty before any EXT-X-KEY.
    package var keys: [HLSKey] = []
    /// The EXT-X-MAP in effect.
    package var map: HLSMap?
    /// EXT-X-DISCONTINUITY before this segment.
    package var discontinuity: Bool = false
    /// EXT-X-GAP: the segment is missing.
    package var isGap: Bool = false
    /// The EXT-X-PART tags of this segment, in order.
    package var parts: [HLSPart] = []

    /// The key in effect for the "identity" key format (the one a proxy can
    /// use), else the first one; nil when none is in effect.
    package var key: HLSKey? {
        keys.first { $0.keyFormat == "identity" } ?? keys.first
    }

    /// Whether some key in effect encrypts the segment.
    package var isEncrypted: Bool { keys.contains { $0.method != .none } }
}

/// EXT-X-PLAYLIST-TYPE.
package enum HLSPlaylistType: Sendable, Equatable {
    case vod, event
}

/// A media playlist.
package struct HLSMediaPlaylist: Sendable, Equatable {
    /// EXT-X-TARGETDURATION, seconds.
    package var targetDuration: Int
    /// EXT-X-MEDIA-SEQUENCE (0 when absent).
    package var mediaSequence: Int = 0
    package var discontinuitySequence: Int = 0
    package var playlistType: HLSPlaylistType?
    package var hasEndList = false
    /// PART-TARGET of EXT-X-PART-INF (low-latency playlists).
    package var partTargetDuration: Double?
    package var segments: [HLSSegment] = []
    /// Parts after the last segment: the segment being produced.
    package var trailingParts: [HLSPart] = []
    package var preloadHints: [HLSPreloadHint] = []

    /// Whether the playlist may still change: no EXT-X-ENDLIST and not VOD.
    package var isLive: Bool { !hasEndList && playlistType != .vod }

    /// How long a proxy may serve this playlist again without asking the
    /// origin: half the target duration (see `HLS.liveReuseMilliseconds`).
    package var liveReuseMilliseconds: Int { HLS.liveReuseMilliseconds(targetDuration: targetDuration) }

    /// Sum of the segment durations, seconds.
    package var totalDuration: Double { segments.reduce(0) { $0 + $1.duration } }

    package init(targetDuration: Int) {
        self.targetDuration = targetDuration
    }
}

/// A parsed playlist.
package enum HLSPlaylist: Sendable, Equatable {
    case master(HLSMasterPlaylist)
    case media(HLSMediaPlaylist)
}
