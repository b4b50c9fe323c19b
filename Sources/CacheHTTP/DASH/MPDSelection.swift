// Which representations of an MPD a preload fetches: per adaptation set,
// by bandwidth (as HLS variants), and audio and text tracks by language.

extension MPDAdaptationSet {
    /// The representation a preference picks (by `bandwidth`, as
    /// `HLSMasterPlaylist.variant`); nil when there is none.
    package func representation(_ preference: HLSVariantPreference) -> MPDRepresentation? {
        preference.pick(representations) { $0.bandwidth }
    }

    /// Whether the set's language is `language` or a more specific tag of
    /// it ("en" matches "en-GB"; any case).
    package func speaks(_ language: String) -> Bool {
        guard let lang = self.language?.lowercased() else { return false }
        let wanted = language.lowercased()
        return lang == wanted || lang.hasPrefix(wanted + "-")
    }
}

extension MPDPeriod {
    /// The adaptation sets a preload keeps: every video set; audio and text
    /// sets all, or with `language` those in it (all of a kind when none of
    /// that kind is).
    package func adaptationSets(language: String?) -> [MPDAdaptationSet] {
        guard let language else { return adaptationSets }
        return adaptationSets.filter { set in
            guard set.kind == .audio || set.kind == .text else { return true }
            let sameKind = adaptationSets.filter { $0.kind == set.kind }
            return set.speaks(language) || !sameKind.contains { $0.speaks(language) }
        }
    }
}
