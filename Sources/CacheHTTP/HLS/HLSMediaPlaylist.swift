/// A sub-range of a resource, implicit offsets made explicit.
package struct HLSByteRange: Sendable, Equatable {
    package var offset: Int64
    package var length: Int64
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

/// EXT-X-KEY or EXT-X-SESSION-KEY.
package struct HLSKey: Sendable, Equatable {
    package var method: HLSKeyMethod
    package var uri: String?  // absolute when http(s); `skd://…`, `data:…` as written. nil for NONE
    package var iv: [UInt8]?
    package var keyFormat = "identity"  // KEYFORMAT, "identity" when absent
    package var keyFormatVersions: String?

    /// The tag's IV, else the media sequence number, 128-bit big-endian (RFC 8216bis §5.2).
    package func iv(forMediaSequence sequence: Int) -> [UInt8] {
        iv ?? [UInt8](repeating: 0, count: 8)
            + withUnsafeBytes(of: UInt64(truncatingIfNeeded: sequence).bigEndian, Array.init)
    }
}

/// EXT-X-MAP: the media initialization section.
package struct HLSMap: Sendable, Equatable {
    package var uri: String
    package var byteRange: HLSByteRange?  // BYTERANGE; an omitted offset is 0
}

/// EXT-X-PART.
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

/// EXT-X-PRELOAD-HINT: a resource the server will soon have.
package struct HLSPreloadHint: Sendable, Equatable {
    package var type: HLSPreloadHintType
    package var uri: String
    /// BYTERANGE-START (0 when absent) and BYTERANGE-LENGTH (nil: to the end).
    package var byteRangeStart: Int64 = 0
    package var byteRangeLength: Int64?
}

package struct HLSSegment: Sendable, Equatable {
    package var uri: String
    package var duration: Double  // EXTINF duration, seconds
    package var title: String?  // EXTINF title; nil when empty
    package var mediaSequence: Int = 0
    package var byteRange: HLSByteRange?
    /// Every EXT-X-KEY in effect, one per KEYFORMAT; `[NONE]` after METHOD=NONE, empty before any.
    package var keys: [HLSKey] = []
    package var map: HLSMap?
    package var discontinuity: Bool = false  // EXT-X-DISCONTINUITY before this segment
    package var isGap: Bool = false  // EXT-X-GAP: the segment is missing
    package var parts: [HLSPart] = []

    /// The "identity" key (the one a proxy can use), else the first.
    package var key: HLSKey? { keys.first { $0.keyFormat == "identity" } ?? keys.first }

    package var isEncrypted: Bool { keys.contains { $0.method != .none } }
}

/// EXT-X-PLAYLIST-TYPE.
package enum HLSPlaylistType: Sendable, Equatable {
    case vod, event
}

/// The media playlist as values: segments with what fetching needs (absolute URI, explicit
/// byte range, key and map in effect), low-latency parts and hints, and the live rules.
package struct HLSMediaPlaylist: Sendable, Equatable {
    package var targetDuration: Int  // EXT-X-TARGETDURATION, seconds
    package var mediaSequence: Int = 0  // EXT-X-MEDIA-SEQUENCE (0 when absent)
    package var discontinuitySequence: Int = 0
    package var playlistType: HLSPlaylistType?
    package var hasEndList = false
    package var partTargetDuration: Double?  // PART-TARGET of EXT-X-PART-INF (low-latency playlists)
    package var segments: [HLSSegment] = []
    package var trailingParts: [HLSPart] = []  // parts after the last segment: the segment being produced
    package var preloadHints: [HLSPreloadHint] = []

    /// May still change: no EXT-X-ENDLIST and not VOD.
    package var isLive: Bool { !hasEndList && playlistType != .vod }
    package var liveReuseMilliseconds: Int { HLS.liveReuseMilliseconds(targetDuration: targetDuration) }
    /// Seconds.
    package var totalDuration: Double { segments.reduce(0) { $0 + $1.duration } }

    package init(targetDuration: Int) { self.targetDuration = targetDuration }
}

package enum HLSPlaylist: Sendable, Equatable {
    case master(HLSMasterPlaylist)
    case media(HLSMediaPlaylist)
}
