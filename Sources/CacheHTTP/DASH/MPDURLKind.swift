// Where a URL stands in an MPD: the rewriter hands it to the mapping, so a
// proxy knows templates (whose tail the player fills in) from plain URLs,
// and leaves licence and timing servers alone unless asked.

/// The role of a URL in an MPD.
package enum MPDURLKind: Sendable, Equatable, CaseIterable {
    /// `BaseURL` (MPD, Period, AdaptationSet, Representation).
    case baseURL
    /// `SegmentTemplate@media`, `@initialization`, `@index`, `@bitstreamSwitching`:
    /// templates with `$…$` identifiers the player substitutes.
    case mediaTemplate, initializationTemplate, indexTemplate, bitstreamSwitchingTemplate
    /// `SegmentURL@media` and `SegmentURL@index`.
    case segment, segmentIndex
    /// `Initialization@sourceURL`, `RepresentationIndex@sourceURL`, `BitstreamSwitching@sourceURL`.
    case initialization, representationIndex, bitstreamSwitching
    /// `Location` and `PatchLocation`: where the MPD (or its patches) is fetched again.
    case location, patchLocation
    /// `xlink:href` of a remote element.
    case remoteElement
    /// A licence server URL in `ContentProtection` (`Laurl`, `laurl@licenseUrl`).
    case licence
    /// `UTCTiming@value` of an http scheme.
    case timing

    /// Whether the URL is a template the player fills in.
    package var isTemplate: Bool {
        switch self {
        case .mediaTemplate, .initializationTemplate, .indexTemplate, .bitstreamSwitchingTemplate: return true
        default: return false
        }
    }

    /// Whether it is part of segment information (SegmentTemplate,
    /// SegmentList, SegmentBase), which applies to every Representation below.
    package var isSegmentInformation: Bool {
        switch self {
        case .baseURL, .location, .patchLocation, .remoteElement, .licence, .timing: return false
        default: return true
        }
    }

    /// Whether the default mapping leaves it pointing where it points (a
    /// hook may still rewrite it).
    package var isKeptByDefault: Bool { self == .licence || self == .timing }
}
