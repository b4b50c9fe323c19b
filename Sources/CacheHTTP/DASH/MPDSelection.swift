// Which representations a preload fetches: by bandwidth, and audio and text by language.

extension MPDAdaptationSet {
    package func representation(_ preference: HLSVariantPreference) -> MPDRepresentation? {
        preference.pick(representations) { $0.bandwidth }
    }

    /// "en" matches "en-GB"; any case.
    package func speaks(_ language: String) -> Bool {
        guard let lang = self.language?.lowercased() else { return false }
        let wanted = language.lowercased()
        return lang == wanted || lang.hasPrefix(wanted + "-")
    }
}

extension MPDPeriod {
    /// Every video set; audio and text all, or those in `language` (all of a kind when none is).
    package func adaptationSets(language: String?) -> [MPDAdaptationSet] {
        guard let language else { return adaptationSets }
        return adaptationSets.filter { set in
            guard set.kind == .audio || set.kind == .text else { return true }
            let sameKind = adaptationSets.filter { $0.kind == set.kind }
            return set.speaks(language) || !sameKind.contains { $0.speaks(language) }
        }
    }
}
