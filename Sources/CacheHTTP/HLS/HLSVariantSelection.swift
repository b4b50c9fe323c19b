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

    /// What this preference picks of `candidates` by `bandwidth` (HLS
    /// variants, DASH representations); nil when there are none. Among equal
    /// bandwidths the one listed first wins (comparisons are strict).
    func pick<T>(_ candidates: [T], bandwidth: (T) -> Int) -> T? {
        func best(_ among: [T], highest: Bool) -> T? {
            among.reduce(nil) { best, x in
                best.map { (highest ? bandwidth(x) > bandwidth($0) : bandwidth(x) < bandwidth($0)) ? x : $0 } ?? x
            }
        }
        switch self {
        case .highest: return best(candidates, highest: true)
        case .lowest: return best(candidates, highest: false)
        case .closest(let limit):
            return best(candidates.filter { bandwidth($0) <= limit }, highest: true) ?? best(candidates, highest: false)
        }
    }
}

extension HLSMasterPlaylist {
    /// The variant a preference picks; nil when there are no variants. Among
    /// equal bandwidths the one listed first wins.
    package func variant(_ preference: HLSVariantPreference) -> HLSVariant? {
        preference.pick(variants) { $0.bandwidth }
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
