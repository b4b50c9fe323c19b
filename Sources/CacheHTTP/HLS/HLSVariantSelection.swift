/// Which variant (or DASH representation) a preloader fetches, by bandwidth.
package enum HLSVariantPreference: Sendable, Equatable {
    case highest
    case lowest
    /// The highest not above this many bits per second; the lowest when all are above.
    case closest(toBandwidth: Int)

    /// Among equal bandwidths the first listed wins (comparisons are strict).
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
    package func variant(_ preference: HLSVariantPreference) -> HLSVariant? {
        preference.pick(variants) { $0.bandwidth }
    }

    /// Of its AUDIO, VIDEO and SUBTITLES groups (closed captions travel inside the video), in
    /// playlist order; a nil `uri` is carried in the variant itself.
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
