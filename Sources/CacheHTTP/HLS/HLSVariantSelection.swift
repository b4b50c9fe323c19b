// Which variant a preloader fetches, and the renditions that play with it.

/// How to pick one variant of a multivariant playlist.
package enum HLSVariantPreference: Sendable, Equatable {
    /// The highest BANDWIDTH.
    case highest
    /// The lowest BANDWIDTH.
    case lowest
    /// The highest BANDWIDTH not above this many bits per second; the lowest
    /// variant when all are above.
    case closest(toBandwidth: Int)
}

extension HLSMasterPlaylist {
    /// The variant a preference picks; nil when there are no variants. Among
    /// equal bandwidths the one listed first wins.
    package func variant(_ preference: HLSVariantPreference) -> HLSVariant? {
        // Strict comparisons keep the first of equals.
        func lowest() -> HLSVariant? {
            variants.reduce(nil) { best, v in best.map { v.bandwidth < $0.bandwidth ? v : $0 } ?? v }
        }
        switch preference {
        case .highest:
            return variants.reduce(nil) { best, v in best.map { v.bandwidth > $0.bandwidth ? v : $0 } ?? v }
        case .lowest:
            return lowest()
        case .closest(let limit):
            let fitting = variants.filter { $0.bandwidth <= limit }
            return fitting.reduce(nil) { best, v in best.map { v.bandwidth > $0.bandwidth ? v : $0 } ?? v }
                ?? lowest()
        }
    }

    /// The renditions a variant refers to: its AUDIO, VIDEO and SUBTITLES
    /// groups (closed captions travel inside the video), in playlist order.
    /// Renditions with a nil `uri` are carried in the variant itself.
    package func renditions(for variant: HLSVariant) -> [HLSRendition] {
        renditions.filter { r in
            switch r.type {
            case .audio: return r.groupID == variant.audioGroup
            case .video: return r.groupID == variant.videoGroup
            case .subtitles: return r.groupID == variant.subtitlesGroup
            case .closedCaptions: return false
            }
        }
    }
}
