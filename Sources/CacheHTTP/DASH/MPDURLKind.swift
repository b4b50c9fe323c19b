/// Where a URL stands in an MPD: the mapping learns it, so a proxy tells templates (whose tail
/// the player fills in) from plain URLs, and leaves licence and timing servers alone unless asked.
package enum MPDURLKind: Sendable, Equatable, CaseIterable {
    case baseURL
    /// `SegmentTemplate@media`, `@initialization`, `@index`, `@bitstreamSwitching`.
    case mediaTemplate, initializationTemplate, indexTemplate, bitstreamSwitchingTemplate
    case segment, segmentIndex  // `SegmentURL@media` and `SegmentURL@index`
    case initialization, representationIndex, bitstreamSwitching  // `@sourceURL` of these elements
    case location, patchLocation  // where the MPD (or its patches) is fetched again
    case remoteElement  // `xlink:href`
    case licence  // in `ContentProtection`: `Laurl`, `laurl@licenseUrl`
    case timing  // `UTCTiming@value` of an http scheme

    package var isTemplate: Bool {
        switch self {
        case .mediaTemplate, .initializationTemplate, .indexTemplate, .bitstreamSwitchingTemplate: return true
        default: return false
        }
    }

    /// SegmentTemplate, SegmentList, SegmentBase: applies to every Representation below.
    package var isSegmentInformation: Bool {
        switch self {
        case .baseURL, .location, .patchLocation, .remoteElement, .licence, .timing: return false
        default: return true
        }
    }

    /// The default mapping leaves it alone (a hook may still rewrite it).
    package var isKeptByDefault: Bool { self == .licence || self == .timing }
}
